"""Writing checkpoints back: the code part of checkpoint/restore and session/rewind.

Runs on the checkpoint thread, holding the workspace's checkpoint lock while it reads, decides
and writes, so a watcher batch sees its writes only once the baseline already says them.

Every write and delete goes through the checkpointer's WorkspaceFiles (adapters.workspace_fs): the path is walked from the workspace
root without following a symlink, at the moment of writing; a path that now passes through one
is not touched and the step comes back `kept` with the reason. A restored file gets the mode
its checkpoint recorded (the current file's, or the umask's default, for states recorded before
modes were).

A restore is journaled in the checkpoint index before its first write (the planned steps, and
for a "both" rewind the messages it takes out) and closed after its last; restore_journal
settles one a kill interrupted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokend.core.checkpoints.turns import Action, FileChange, RestoreStep, plan_restore
from tokend.core.errors import InvalidParams
from tokend.core.workspace.files import PathConflict, Seen, sha256_bytes
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.ports import WorkspaceFiles
from tokend.service.workspace.registry import folder_of

SYMLINK_NOTE = "tokend never writes through a symlink"


@dataclass(frozen=True, slots=True)
class Restored:
    to_message_id: str
    dry_run: bool
    steps: tuple[RestoreStep, ...]
    outside: tuple[str, ...]
    journal_id: int | None = None  # the journal row, left open for a "both" rewind


def restore(
    checkpoints: Checkpoints,
    session_id: str,
    to_message_id: str,
    dry_run: bool,
    force: bool,
    conversation: Sequence[str] | None = None,
) -> Restored:
    """Write back the states the agent's changes after `to_message_id` replaced. With
    `conversation` (the message ids a "both" rewind takes out) the journal stays open until
    the caller closes it, after the conversation part."""
    ws, marks = checkpoints.store.marks.session(session_id)
    points = [m.at for m in marks if m.message_id == to_message_id]
    if ws is None or not points:
        raise InvalidParams(
            f"toMessageId {to_message_id} has no checkpoint in session {session_id} (tokend was "
            "not watching the workspace when it was appended): checkpoint/list names the turns"
        )
    root = folder_of(ws)
    index = checkpoints.workspaces.get(ws)
    if index:
        index.buffers.settle()  # the buffers editors sent before this request count as dirty
    dirty = set(index.overlays()) if index else set()
    with checkpoints.lock(ws):
        changes = checkpoints.store.changes(ws, since=marks[0].at)
        involved = {c.path for c in changes if c.at > points[0]}
        current = {p: _current(checkpoints, root, p, save=not dry_run) for p in involved}
        plan = plan_restore(
            points[0], marks, changes, current, dirty, checkpoints.store.has_blob, force
        )
        if dry_run:
            steps = tuple(_as_it_would_go(checkpoints.files, root, s) for s in plan.steps)
            return Restored(to_message_id, True, steps, plan.outside)
        journal = checkpoints.store.journal.begin_restore(
            ws,
            session_id,
            to_message_id,
            encode_plan(plan.steps),
            None if conversation is None else json.dumps(list(conversation)),
        )
        steps = tuple(apply_steps(checkpoints, ws, root, plan.steps))
        if conversation is None:
            checkpoints.store.journal.end_restore(journal)
            journal = 0
    return Restored(to_message_id, False, steps, plan.outside, journal or None)


def undo(checkpoints: Checkpoints, session_id: str, restored: Restored) -> None:
    """Put back what `restored` replaced (its conversation part was refused), and close its
    journal. A path changed again since is left as it is."""
    ws, _ = checkpoints.store.marks.session(session_id)
    if ws is None:
        return
    root = folder_of(ws)
    back = []
    for step in restored.steps:
        if step.action not in ("write", "create", "delete"):
            continue
        action: Action = (
            "delete" if step.current is None else "create" if step.target is None else "write"
        )
        back.append(RestoreStep(step.path, action, step.current, step.target))
    with checkpoints.lock(ws):
        here = [s for s in back if disk_sha(checkpoints.files, root, s.path) == s.current]
        apply_steps(checkpoints, ws, root, here)
        if restored.journal_id is not None:
            checkpoints.store.journal.end_restore(restored.journal_id, "undone")


def _as_it_would_go(files: WorkspaceFiles, root: Path, step: RestoreStep) -> RestoreStep:
    """A dry run's step: kept when the write or delete would be refused now."""
    if step.action not in ("write", "create", "delete"):
        return step
    try:
        files.probe(root, step.path)
    except PathConflict as exc:
        reason = f"not restored: {exc.reason} ({SYMLINK_NOTE})"
        return RestoreStep(step.path, "kept", step.target, step.current, reason)
    return step


def _current(checkpoints: Checkpoints, root: Path, rel: str, save: bool) -> str | None:
    """The hash of `rel` on disk now (None: absent, or not reachable without a symlink);
    with `save`, its bytes are saved first (so a forced restore loses nothing)."""
    if save:
        state, _ = checkpoints.capture(root, rel, None)
        return state.sha if state else None
    return disk_sha(checkpoints.files, root, rel)


def disk_sha(files: WorkspaceFiles, root: Path, rel: str) -> str | None:
    try:
        return sha256_bytes(files.read_bytes(root, rel, follow_inside=False))
    except (OSError, PathConflict):
        return None


def apply_steps(
    checkpoints: Checkpoints, ws: str, root: Path, steps: Sequence[RestoreStep]
) -> list[RestoreStep]:
    """Carry out the steps, writes before deletes; those that could not be are returned
    `kept`, with the reason. A moved file that cannot go back keeps its new copy too."""
    outcome: dict[int, RestoreStep] = {}
    changes: list[FileChange] = []
    seen: dict[str, Seen | None] = {}
    stranded: set[str] = set()  # where a file that could not move back now lives
    order = sorted(range(len(steps)), key=lambda i: steps[i].action == "delete")
    for i in order:
        step = steps[i]
        if step.action in ("kept", "unavailable"):
            outcome[i] = step
            continue
        if step.action == "delete" and step.path in stranded:
            reason = "its bytes could not be moved back to where they came from: kept"
            outcome[i] = RestoreStep(step.path, "kept", step.target, step.current, reason)
            continue
        try:
            seen[step.path] = _carry_out(checkpoints, root, step)
        except (OSError, PathConflict) as exc:
            reason = (
                f"not restored: {exc.reason} ({SYMLINK_NOTE})"
                if isinstance(exc, PathConflict)
                else str(exc)
            )
            outcome[i] = RestoreStep(step.path, "kept", step.target, step.current, reason)
            if step.moved_back_from:
                stranded.add(step.moved_back_from)
            continue
        outcome[i] = step
        changes.append(FileChange(0, step.path, step.current, step.target, time.time(), "restore"))
    checkpoints.store.set_baseline(ws, seen)
    checkpoints.store.add_changes(ws, changes)
    return [outcome[i] for i in range(len(steps))]


def _carry_out(checkpoints: Checkpoints, root: Path, step: RestoreStep) -> Seen | None:
    if step.target is None:
        checkpoints.files.delete(root, step.path)
        return None
    data = checkpoints.store.blob(step.target)
    if data is None:
        raise OSError(f"the saved state {step.target[:12]} is missing")
    mode = (
        step.mode if step.mode is not None else _existing_mode(checkpoints.files, root, step.path)
    )
    st = checkpoints.files.write_atomic(root, step.path, data, mode)
    return Seen(step.target, len(data), st.st_mtime_ns, True, mode)


def _existing_mode(files: WorkspaceFiles, root: Path, rel: str) -> int:
    """For a state recorded before modes were: the file's mode now, else the umask's default."""
    try:
        found = files.stat_file(root, rel, follow_inside=False)
    except (OSError, PathConflict):
        found = None
    return found.st_mode & 0o777 if found is not None else 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else the usual 022."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


# -- the journal's plan -------------------------------------------------------------------


def encode_plan(steps: Sequence[RestoreStep]) -> str:
    """The steps a restore is about to carry out, as the journal keeps them (JSON)."""
    return json.dumps(
        [
            {"path": s.path, "action": s.action, "target": s.target, "current": s.current}
            | ({"mode": s.mode} if s.mode is not None else {})
            | ({"movedBackFrom": s.moved_back_from} if s.moved_back_from else {})
            for s in steps
            if s.action in ("write", "create", "delete")
        ]
    )


def decode_plan(text: str) -> list[RestoreStep]:
    return [
        RestoreStep(
            str(item["path"]),
            item["action"],
            item.get("target"),
            item.get("current"),
            moved_back_from=item.get("movedBackFrom"),
            mode=item.get("mode"),
        )
        for item in json.loads(text)
    ]
