"""Reading checkpoints (checkpoint/list, checkpoint/diff) and, from the event loop, the code part
of a rewind (service.checkpoints.restore writes it).

Every function here runs on the checkpoint thread (`Checkpoints.submit`), after the marks and
watcher batches recorded before it; the `*_async` forms await it from the event loop. A restore
holds the workspace's checkpoint lock while it reads, decides and writes, so a watcher batch
sees its writes only once the baseline already says them (they are not changes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tokend.core.checkpoints.summary import FileSummary, line_counts, summarize, unified_diff
from tokend.core.checkpoints.turns import FileChange, TurnMark, assign
from tokend.core.errors import InvalidParams
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.checkpoints.restore import Restored as Restored  # re-exported: callers'
from tokend.service.checkpoints.restore import restore as restore  # names stay as they were
from tokend.service.checkpoints.restore import undo
from tokend.service.session import history
from tokend.service.session.turns import run_to_end

T = TypeVar("T")
MAX_COUNTED_BYTES = 1024 * 1024  # +/- lines are counted for states up to this size


@dataclass(frozen=True, slots=True)
class FileView:
    path: str
    kind: str  # created | deleted | modified | moved | unchanged
    added: int | None  # lines; None for a binary or unsaved state
    removed: int | None
    origin: str  # agent | editor | outside
    moved_from: str | None = None
    moved_to: str | None = None


@dataclass(frozen=True, slots=True)
class TurnView:
    message_id: str
    started_at: float
    ended_at: float | None  # None while the agent is still working
    files: tuple[FileView, ...]
    outside: tuple[FileView, ...]
    warnings: tuple[str, ...]


async def on_checkpoint_thread(checkpoints: Checkpoints, work: Callable[[], T]) -> T:
    return await asyncio.wrap_future(checkpoints.submit(work))


def _session(checkpoints: Checkpoints, session_id: str) -> tuple[str | None, list[TurnMark]]:
    """The session's workspace and marks (the caller checked the session exists)."""
    return checkpoints.store.marks.session(session_id)


def _changes(checkpoints: Checkpoints, ws: str, marks: list[TurnMark]) -> list[FileChange]:
    return checkpoints.store.changes(ws, since=marks[0].at) if marks else []


def list_turns(checkpoints: Checkpoints, session_id: str) -> list[TurnView]:
    ws, marks = _session(checkpoints, session_id)
    if ws is None:
        return []
    views = []
    for turn in assign(marks, _changes(checkpoints, ws, marks)):
        files = [_view(checkpoints, s, "agent") for s in summarize(turn.agent)]
        by_editor = {c.path for c in turn.outside if c.origin == "editor"}
        outside = [
            _view(checkpoints, s, "editor" if s.path in by_editor else "outside")
            for s in summarize(turn.outside)
        ]
        notes = dict.fromkeys(f"{s.path}: {n}" for s in summarize(turn.agent) for n in s.notes)
        views.append(
            TurnView(
                turn.turn.message_id,
                turn.turn.start,
                turn.turn.end,
                tuple(f for f in files if f.kind != "unchanged"),
                tuple(f for f in outside if f.kind != "unchanged"),
                tuple(notes),
            )
        )
    return views


def _view(checkpoints: Checkpoints, s: FileSummary, origin: str) -> FileView:
    counts = None
    (has_before, before), (has_after, after) = (
        _state(checkpoints, s.before),
        _state(checkpoints, s.after),
    )
    if has_before and has_after:
        counts = line_counts(before, after)
    added, removed = counts if counts else (None, None)
    return FileView(s.path, s.kind, added, removed, origin, s.moved_from, s.moved_to)


def _state(checkpoints: Checkpoints, sha: str | None) -> tuple[bool, bytes | None]:
    """(countable?, a state's bytes: None when absent). Not countable: not saved, too large."""
    if sha is None:
        return True, None
    data = checkpoints.store.blob(sha)
    return data is not None and len(data) <= MAX_COUNTED_BYTES, data


def turn_diff(checkpoints: Checkpoints, session_id: str, message_id: str, path: str | None) -> str:
    """The unified diff of what the agent changed in the turn holding `message_id`."""
    ws, marks = _session(checkpoints, session_id)
    turns = assign(marks, _changes(checkpoints, ws, marks)) if ws else []
    found = [t for t in turns if message_id in t.turn.message_ids]
    if not found:
        raise InvalidParams(
            f"messageId {message_id} has no checkpoint in session {session_id}: "
            "checkpoint/list names the turns that have one"
        )
    summaries = summarize(found[0].agent)
    if path is not None:
        summaries = [s for s in summaries if path in (s.path, s.moved_from)]
        if not summaries:
            raise InvalidParams(f"the turn of {message_id} did not change {path!r}")
    parts = []
    for s in summaries:
        before, after = (
            checkpoints.store.blob(s.before or ""),
            checkpoints.store.blob(s.after or ""),
        )
        if (s.before and before is None) or (s.after and after is None):
            parts.append(f"# {s.path}: a state was not saved ({'; '.join(s.notes)})\n")
            continue
        parts.append(unified_diff(s.path, before, after, s.moved_from))
    return "".join(parts)


# -- from the event loop ------------------------------------------------------------------


async def list_async(checkpoints: Checkpoints, session_id: str) -> list[TurnView]:
    checkpoints.service.sessions.state(session_id)  # SessionNotFound for an unknown id
    return await on_checkpoint_thread(checkpoints, lambda: list_turns(checkpoints, session_id))


def watching(checkpoints: Checkpoints, session_id: str) -> bool:
    """Whether the session's workspace is checkpointed yet (its first walk is saved)."""
    uri = checkpoints.service.sessions.state(session_id).data.info.workspace_uri
    try:
        return bool(uri) and checkpoints.walked(checkpoints.workspaces.key(uri or ""))
    except InvalidParams:
        return False


async def diff_async(
    checkpoints: Checkpoints, session_id: str, message_id: str, path: str | None
) -> str:
    checkpoints.service.sessions.state(session_id)
    return await on_checkpoint_thread(
        checkpoints, lambda: turn_diff(checkpoints, session_id, message_id, path)
    )


async def rewind_both(
    checkpoints: Checkpoints,
    session_id: str,
    to_message_id: str,
    if_version: int | None,
    force: bool,
) -> tuple[Restored, history.Rewound]:
    """session/rewind restore "both": files, then conversation, all or nothing. The conversation
    is checked before any file is written; the journal of the files' restore names the messages
    it takes out and is closed only once they are out, so a restart after a kill in between
    finishes both (restore_journal). The files are written on the checkpoints' thread, which a
    cancel cannot stop: once they are, a cancel is too late and the rewind runs to its end."""
    service = checkpoints.service
    service.sessions.state(session_id)
    ids = history.planned_rewind(service, session_id, to_message_id, if_version)
    return await run_to_end(
        _files_then_conversation(checkpoints, session_id, to_message_id, if_version, force, ids)
    )


async def _files_then_conversation(
    checkpoints: Checkpoints,
    session_id: str,
    to_message_id: str,
    if_version: int | None,
    force: bool,
    ids: tuple[str, ...],
) -> tuple[Restored, history.Rewound]:
    service = checkpoints.service
    restored = await on_checkpoint_thread(
        checkpoints,
        lambda: restore(checkpoints, session_id, to_message_id, False, force, conversation=ids),
    )
    journal = restored.journal_id
    try:
        rewound = await history.rewind(service, session_id, to_message_id, if_version)
    except BaseException:  # refused (say, an append raced in): the files go back too
        await on_checkpoint_thread(checkpoints, lambda: undo(checkpoints, session_id, restored))
        raise
    if journal is not None:
        await on_checkpoint_thread(
            checkpoints, lambda: checkpoints.store.journal.end_restore(journal)
        )
    return restored, rewound


async def restore_code(
    checkpoints: Checkpoints, session_id: str, to_message_id: str, dry_run: bool, force: bool
) -> Restored:
    """The code part of a rewind (session/rewind's restore "code" | "both" calls this):
    see `restore`. Not a dry run, it writes from its start on the checkpoints' thread: a cancel
    is too late and the result is returned."""
    checkpoints.service.sessions.state(session_id)
    work = on_checkpoint_thread(
        checkpoints, lambda: restore(checkpoints, session_id, to_message_id, dry_run, force)
    )
    return await (work if dry_run else run_to_end(work))
