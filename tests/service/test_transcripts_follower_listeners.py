"""A follower tells each connection that asked for a transcript's session, and forgets the
connections that are gone: `tokend statusline` asks on a new connection at every refresh of
Claude Code's status line (every few hundred milliseconds), so a follower that kept every
listener would grow without end and call every closed connection at each refresh."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from tests.conftest import session_file
from tokend.adapters.watch import PathWatch
from tokend.service.app import open_service
from tokend.service.transcripts.followers import Followers
from tokend.service.transcripts.tail import TailStatus

REFRESHES = 50


def test_a_follower_calls_a_gone_listener_once_and_then_forgets_it(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    shutil.copy(session_file("short.jsonl"), transcript)
    service = open_service(None, f"sqlite:///{tmp_path}/s.sqlite3")
    gone_calls: list[str] = []
    live_calls: list[str | None] = []

    def gone(follower_id: str, transcript: TailStatus) -> bool:
        gone_calls.append(follower_id)
        return False  # the connection that asked has closed

    def live(follower_id: str, transcript: TailStatus) -> bool:
        live_calls.append(transcript.session_id)
        return True

    async def refreshes() -> None:
        followers = Followers(service, watch=PathWatch)
        try:
            first = await followers.start("claude-code", str(transcript), on_session=live)
            assert first.transcripts[0].caught_up
            for _ in range(REFRESHES):
                await followers.start("claude-code", str(transcript), on_session=gone)
        finally:
            followers.close()

    try:
        asyncio.run(refreshes())
    finally:
        service.close()
    assert len(gone_calls) == REFRESHES  # each once (before: 1 + 2 + ... + 50 = 1,275)
    assert len(live_calls) == 1 + REFRESHES  # the live one hears of every new start
    assert len(set(live_calls)) == 1 and live_calls[0] is not None
