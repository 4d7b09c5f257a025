"""Reading and rewinding checkpoints: checkpoint/list, checkpoint/diff, the code part of a rewind.

Every function here runs on the checkpoint thread (`Checkpoints.submit`), after the marks and
watcher batches recorded before it; the `*_async` forms await it from the event loop. A restore
holds the workspace's checkpoint lock while it reads, decides and writes, so a watcher batch
sees its writes only once the baseline already says them (they are not changes).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tokend.adapters.checkpoint_store import Seen, sha256_bytes
from tokend.core.checkpoints import (
    FileChange,
    FileSummary,
    RestoreStep,
    TurnMark,
    assign,
    line_counts,
    plan_restore,
    summarize,
    unified_diff,
)
from tokend.core.errors import InvalidParams
from tokend.service.checkpoints import Checkpoints, checkpoints_of
from tokend.service.service import TokendService
from tokend.service.workspace.registry import folder_of

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


@dataclass(frozen=True, slots=True)
class Restored:
    to_message_id: str
    dry_run: bool
    steps: tuple[RestoreStep, ...]
    outside: tuple[str, ...]


async def on_checkpoint_thread(checkpoints: Checkpoints, work: Callable[[], T]) -> T:
    return await asyncio.wrap_future(checkpoints.submit(work))


def _session(checkpoints: Checkpoints, session_id: str) -> tuple[str | None, list[TurnMark]]:
    """The session's workspace and marks (the caller checked the session exists)."""
    return checkpoints.store.marks(session_id)


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


def restore(
    checkpoints: Checkpoints, session_id: str, to_message_id: str, dry_run: bool, force: bool
) -> Restored:
    """Write back the states the agent's changes after `to_message_id` replaced."""
    ws, marks = _session(checkpoints, session_id)
    points = [m.at for m in marks if m.message_id == to_message_id]
    if ws is None or not points:
        raise InvalidParams(
            f"toMessageId {to_message_id} has no checkpoint in session {session_id} (tokend was "
            "not watching the workspace when it was appended): checkpoint/list names the turns"
        )
    root = folder_of(ws)
    index = checkpoints.workspaces.get(ws)
    dirty = set(index.overlays()) if index else set()
    with checkpoints.lock(ws):
        changes = _changes(checkpoints, ws, marks)
        involved = {c.path for c in changes if c.at > points[0]}
        current = {p: _current(checkpoints, root, p, save=not dry_run) for p in involved}
        plan = plan_restore(
            points[0], marks, changes, current, dirty, checkpoints.store.has_blob, force
        )
        steps = plan.steps if dry_run else tuple(_apply(checkpoints, ws, root, plan.steps))
    return Restored(to_message_id, dry_run, steps, plan.outside)


def _current(checkpoints: Checkpoints, root: Path, rel: str, save: bool) -> str | None:
    if save:
        state, _ = checkpoints.capture(root, rel, None)
        return state.sha if state else None
    try:
        return sha256_bytes((root / rel).read_bytes()) if (root / rel).is_file() else None
    except OSError:
        return None


def _apply(
    checkpoints: Checkpoints, ws: str, root: Path, steps: tuple[RestoreStep, ...]
) -> list[RestoreStep]:
    done: list[RestoreStep] = []
    changes: list[FileChange] = []
    seen: dict[str, Seen | None] = {}
    for step in steps:
        if step.action in ("kept", "unavailable"):
            done.append(step)
            continue
        full = root / step.path
        try:
            if step.target is None:
                full.unlink(missing_ok=True)
                _prune_empty(root, full.parent)
                seen[step.path] = None
            else:
                data = checkpoints.store.blob(step.target)
                if data is None:
                    raise OSError(f"the saved state {step.target[:12]} is missing")
                _write(full, data)
                mtime = full.stat().st_mtime_ns
                seen[step.path] = Seen(step.target, len(data), mtime, True)
        except OSError as exc:
            done.append(RestoreStep(step.path, "kept", step.target, step.current, str(exc)))
            continue
        done.append(step)
        changes.append(FileChange(0, step.path, step.current, step.target, time.time(), "restore"))
    checkpoints.store.set_baseline(ws, seen)
    checkpoints.store.add_changes(ws, changes)
    return done


def _write(full: Path, data: bytes) -> None:
    """Replace a file's bytes in one step, keeping its permissions when it exists."""
    full.parent.mkdir(parents=True, exist_ok=True)
    tmp = full.with_name(f".{full.name}.tokend-restore")
    tmp.write_bytes(data)
    try:
        os.chmod(tmp, full.stat().st_mode & 0o7777)
    except OSError:
        pass
    os.replace(tmp, full)


def _prune_empty(root: Path, folder: Path) -> None:
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


# -- from the event loop ------------------------------------------------------------------


async def list_async(service: TokendService, session_id: str) -> list[TurnView]:
    service.state(session_id)  # SessionNotFound for an unknown id
    checkpoints = checkpoints_of(service)
    return await on_checkpoint_thread(checkpoints, lambda: list_turns(checkpoints, session_id))


def watching(service: TokendService, session_id: str) -> bool:
    """Whether the session's workspace is checkpointed yet (its first walk is saved)."""
    uri = service.state(session_id).data.info.workspace_uri
    checkpoints = checkpoints_of(service)
    try:
        return bool(uri) and checkpoints.walked(checkpoints.workspaces.key(uri or ""))
    except InvalidParams:
        return False


async def diff_async(
    service: TokendService, session_id: str, message_id: str, path: str | None
) -> str:
    service.state(session_id)
    checkpoints = checkpoints_of(service)
    return await on_checkpoint_thread(
        checkpoints, lambda: turn_diff(checkpoints, session_id, message_id, path)
    )


async def restore_code(
    service: TokendService, session_id: str, to_message_id: str, dry_run: bool, force: bool
) -> Restored:
    """The code part of a rewind (session/rewind's restore "code" | "both" calls this):
    see `restore`."""
    service.state(session_id)
    checkpoints = checkpoints_of(service)
    return await on_checkpoint_thread(
        checkpoints, lambda: restore(checkpoints, session_id, to_message_id, dry_run, force)
    )
