"""Settling a restore a kill interrupted: when the checkpointer opens, every journaled restore
still "running" (the process that wrote it is gone) is finished or reported.

- Its files roll forward: a planned path whose bytes are still what the restore found is
  written (or deleted) now; one already at its target is left; one changed by someone since is
  kept and reported. The temporary `.NAME.tokend-restore` copies it may have left are removed.
- The conversation of a "both" rewind rolls forward too: the messages it was taking out that
  are still live leave the live context (as session/rewind does). Files and conversation thus
  end both rewound, never one without the other.
- The journal row becomes "interrupted" with what was done (`checkpoint/list` shows it in
  `interrupted`), and every connected client gets a window/logMessage saying so.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tokend.core.checkpoints.turns import FileChange, RestoreStep
from tokend.core.errors import TokendError
from tokend.core.workspace.files import JournaledRestore, Seen
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.checkpoints.restore import apply_steps, decode_plan, disk_sha
from tokend.service.ports import WorkspaceFiles
from tokend.service.session import history
from tokend.service.workspace.registry import folder_of

log = logging.getLogger(__name__)

CONVERSATION_SECONDS = 60.0  # how long settling waits for the event loop to rewind a session
Send = Callable[[Any, str], None]  # (a connection's server, the message)


@dataclass(frozen=True, slots=True)
class Interrupted:
    """A restore a kill interrupted, as a restart settled it."""

    to_message_id: str
    started_at: float
    both: bool  # a "both" rewind (files and conversation)
    outcome: dict[str, Any]


def listen(checkpoints: Checkpoints, server: Any, send: Send) -> None:
    """Tell `server` (held weakly) of every restore settled from now on: `send(server, text)`
    on the event loop."""
    checkpoints.restore_listeners[server] = send


def start(checkpoints: Checkpoints) -> None:
    """Settle the unfinished restores, on the checkpoint thread before anything else there."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    checkpoints.submit(lambda: settle_all(checkpoints, loop))


def settle_all(checkpoints: Checkpoints, loop: asyncio.AbstractEventLoop | None) -> int:
    """Settle every journaled restore still running; how many there were."""
    rows = [r for r in checkpoints.store.journal.restores("running") if not _still_running(r.pid)]
    for row in rows:
        try:
            outcome = _settle_files(checkpoints, row)
        except Exception as exc:  # one journal that cannot be settled must not stop the others
            log.exception("settling the interrupted restore %s failed", row.id)
            outcome = {"error": f"its files could not be settled: {exc}"}
        if row.conversation is not None:
            outcome["conversation"] = _settle_conversation(checkpoints, row, loop)
        checkpoints.store.journal.end_restore(row.id, "interrupted", json.dumps(outcome))
        text = notice(
            Interrupted(row.to_message_id, row.started_at, row.conversation is not None, outcome),
            row.session_id,
        )
        # To the log file; the clients hear it from _announce (off the loop, none is sent here).
        log.warning("%s", text)
        _announce(checkpoints, loop, text)
    return len(rows)


def _still_running(pid: int | None) -> bool:
    """Whether another tokend process that may still be restoring wrote the row (a standalone
    `tokend lsp` shares the user's checkpoint store)."""
    if pid is None or pid == os.getpid():
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"tokend" in cmdline.read()
    except OSError:
        return False


def _settle_files(checkpoints: Checkpoints, row: JournaledRestore) -> dict[str, Any]:
    root, files = folder_of(row.workspace), checkpoints.files
    plan = decode_plan(row.plan)
    finished: list[RestoreStep] = []
    already: dict[str, Seen | None] = {}
    kept: list[dict[str, str]] = []
    with checkpoints.lock(row.workspace):
        removed = sum(files.remove_temporary(root, s.path) for s in plan)
        todo = []
        for step in plan:
            now = disk_sha(files, root, step.path)
            if now == step.target:
                already[step.path] = _seen(files, root, step)
            elif now == step.current:
                todo.append(step)
            else:
                reason = "changed since the interrupted restore: kept as it is"
                kept.append({"path": step.path, "reason": reason})
        for step in apply_steps(checkpoints, row.workspace, root, todo):
            if step.action == "kept":
                kept.append({"path": step.path, "reason": step.reason or "kept"})
            else:
                finished.append(step)
        checkpoints.store.set_baseline(row.workspace, already)
        checkpoints.store.add_changes(
            row.workspace,
            [
                FileChange(0, s.path, s.current, s.target, time.time(), "restore")
                for s in plan
                if s.path in already
            ],
        )
    return {
        "finished": len(finished),
        "alreadyDone": len(already),
        "kept": kept,
        "temporariesRemoved": removed,
    }


def _seen(files: WorkspaceFiles, root: Any, step: RestoreStep) -> Seen | None:
    if step.target is None:
        return None
    found = files.stat_file(root, step.path, follow_inside=False)
    if found is None:
        return None
    return Seen(step.target, found.st_size, found.st_mtime_ns, True, found.st_mode & 0o777)


def _settle_conversation(
    checkpoints: Checkpoints, row: JournaledRestore, loop: asyncio.AbstractEventLoop | None
) -> str:
    ids = tuple(json.loads(row.conversation or "[]"))
    service = checkpoints.service
    work = history.complete_rewind(service, row.session_id, row.to_message_id, ids)
    try:
        if loop is None:
            return asyncio.run(work)
        return asyncio.run_coroutine_threadsafe(work, loop).result(CONVERSATION_SECONDS)
    except TokendError as exc:
        return f"not rewound: {exc.message}"
    except TimeoutError:
        return "not rewound: the daemon was too busy (rewind it with session/rewind)"


def notice(item: Interrupted, session_id: str) -> str:
    """What the user is told of a settled restore."""
    out = item.outcome
    what = "a rewind (files and conversation)" if item.both else "a restore"
    parts = [f"{out.get('finished', 0)} files finished", f"{out.get('alreadyDone', 0)} done before"]
    if out.get("kept"):
        parts.append(f"{len(out['kept'])} kept as they were ({out['kept'][0]['path']}, ...)")
    if out.get("temporariesRemoved"):
        parts.append(f"{out['temporariesRemoved']} temporary copies removed")
    if "conversation" in out:
        parts.append(f"conversation {out['conversation']}")
    if "error" in out:
        parts.append(out["error"])
    return (
        f"tokend: {what} of session {session_id} to message {item.to_message_id} was "
        f"interrupted (the daemon stopped midway); settled at start: {'; '.join(parts)}. "
        "checkpoint/list shows it under `interrupted`."
    )


def _announce(checkpoints: Checkpoints, loop: asyncio.AbstractEventLoop | None, text: str) -> None:
    def send_all() -> None:
        for server, send in list(checkpoints.restore_listeners.items()):
            try:
                send(server, text)
            except Exception:  # a closed connection must not stop the others hearing of it
                log.debug("could not tell a client of a settled restore", exc_info=True)

    if loop is not None:
        loop.call_soon_threadsafe(send_all)


def interrupted(checkpoints: Checkpoints, session_id: str) -> list[Interrupted]:
    """The session's restores a kill interrupted, as settled (checkpoint/list)."""
    return [
        Interrupted(
            row.to_message_id,
            row.started_at,
            row.conversation is not None,
            json.loads(row.outcome or "{}"),
        )
        for row in checkpoints.store.journal.restores("interrupted", session_id)
    ]
