"""A follower stopped while its transcript's import is committing a message stops: what the
agent writes after that never reaches the session. (A commit finishes whatever cancels it, and
used to swallow the stop: the tail's task went on syncing the file at every poll.)"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from tests.conftest import session_file
from tokend.adapters.watch import PathWatch
from tokend.service.app import open_service
from tokend.service.transcripts.followers import Followers

POLL_SECONDS = 0.05  # the follower's poll: a task still running would sync many times
WAIT_SECONDS = 30.0  # how long a commit may take to start on a loaded machine (not a figure)


def test_a_follower_stopped_during_a_commit_imports_nothing_written_after(tmp_path: Path):
    lines = session_file("short.jsonl").read_text().splitlines(keepends=True)
    half = len(lines) // 2
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(lines[:half]))
    service = open_service(None, f"sqlite:///{tmp_path}/s.sqlite3")
    store: Any = service.store
    committing, stopped = threading.Event(), threading.Event()
    commit_change = store.commit_change

    def held_commit(session_id: str, commit: Any) -> None:  # the first commit waits for the stop
        committing.set()
        stopped.wait(WAIT_SECONDS)
        commit_change(session_id, commit)

    store.commit_change = held_commit

    async def follow() -> tuple[str, int, int]:
        loop = asyncio.get_running_loop()
        followers = Followers(service, watch=PathWatch, poll_seconds=POLL_SECONDS)
        try:
            status = await followers.start("claude-code", str(transcript), wait=0)
            assert await loop.run_in_executor(None, committing.wait, WAIT_SECONDS)
            followers.stop(status.follower_id)  # while the commit runs
            stopped.set()
            await asyncio.sleep(1.0)  # the import under way ends
            (sid,) = [s.id for s in service.sessions.list_sessions()]
            at_stop = len(service.store.messages.load_all_messages(sid))
            with transcript.open("a") as out:
                out.write("".join(lines[half:]))  # the agent writes on
            await asyncio.sleep(40 * POLL_SECONDS)
            return sid, at_stop, len(service.store.messages.load_all_messages(sid))
        finally:
            followers.close()

    try:
        _sid, at_stop, later = asyncio.run(asyncio.wait_for(follow(), 120))
    finally:
        store.commit_change = commit_change
        service.close()
    assert later == at_stop  # nothing written after the stop was imported
