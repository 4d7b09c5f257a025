"""The statusline feature: statusline/line: Claude Code's status line in one request.

`tokend statusline` runs once per refresh of Claude Code's status line: it forwards the JSON
Claude Code gave it and prints the line this returns. Following the transcript (idempotent),
reading the gauge and rendering it (core.statusline.segments) all happen here, so the command makes one
round trip and parses one string.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokend.core.errors import InvalidParams
from tokend.core.statusline import codex_status
from tokend.core.statusline.segments import last_call, parse_segments, render
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.handler_table import features
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import to_wire
from tokend.lsp.wire.statusline import StatuslineLineResult, StatuslineParams

if TYPE_CHECKING:
    from tokend.service.transcripts.tail import TailStatus

FIRST_ANSWER_SECONDS = 0.1  # what a first read of a transcript is given before the answer


async def line(ls: TokendServer, params: StatuslineParams) -> StatuslineLineResult:
    p = params
    transcript = p.given.get("transcript_path")
    codex = p.agent == "codex"
    if not codex and (not isinstance(transcript, str) or not transcript):
        raise InvalidParams("given.transcript_path: the transcript Claude Code names")
    if codex and transcript is not None and not isinstance(transcript, str):
        raise InvalidParams("given.transcript_path: a Codex rollout file, or absent")
    segments = ls.service.models.config_for(_workspace(p.given)).statusline.segments
    if p.segments is not None:
        try:
            segments = parse_segments(",".join(p.segments))
        except ValueError as exc:
            raise InvalidParams(f"segments: {exc}") from None
    follower = await ls.app.followers.start(p.agent, transcript or None, wait=FIRST_ANSWER_SECONDS)
    followed = _newest(follower.transcripts)
    if followed is None or not followed.caught_up:
        return StatuslineLineResult(None, "reading", None)
    if followed.session_id is None:
        return StatuslineLineResult(None, "waiting", None)
    snapshot = to_wire(to_wire_snapshot(ls.service.sessions.snapshot(followed.session_id)))
    given, last = p.given, None
    if codex:  # Codex's rate limits are in its rollout; its prompt cache is not shown
        records = ls.app.followers.newest_records(followed.path)
        given = {**given, "rate_limits": codex_status.rate_limits(records)}
    else:
        last = last_call(ls.app.followers.newest_records(followed.path))
    text = render(snapshot, given, segments, colour=p.colour, now=time.time(), last=last)
    return StatuslineLineResult(text, "current", followed.session_id)


def _newest(transcripts: tuple[TailStatus, ...]) -> TailStatus | None:
    """The transcript written last (a follower of Codex's sessions folder has several)."""
    if len(transcripts) < 2:
        return transcripts[0] if transcripts else None

    def written(t: TailStatus) -> float:
        try:
            return os.stat(t.path).st_mtime
        except OSError:
            return 0.0

    return max(transcripts, key=written)


def _workspace(given: dict[str, Any]) -> str | None:
    """The folder Claude Code works in (its project folder, else its cwd) as a URI: whose
    `.tokend.toml` says which segments to show."""
    folders = given.get("workspace")
    folder = folders.get("project_dir") if isinstance(folders, dict) else None
    folder = folder if isinstance(folder, str) and folder else given.get("cwd")
    if not isinstance(folder, str) or not os.path.isabs(folder):
        return None
    return Path(folder).as_uri()


FEATURES = features({"statusline/line": line})
