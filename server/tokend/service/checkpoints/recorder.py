"""Recording checkpoints: every file state the workspace had, and when each message came.

The app (service/app.py) builds the one Checkpoints of a daemon; it hooks into the workspaces
and the service's snapshots:

- when a workspace's first walk is done (build thread), every file it kept is read and saved in
  the checkpoint store (content-addressed: a file saved before costs nothing), its hash becoming
  the path's baseline; files that changed while tokend was not running are logged `unwatched`;
- each watcher batch (watcher thread) compares the paths it names with the baseline: a path
  whose bytes differ gets a FileChange from the old hash (saved earlier) to the new one (saved
  now), timed when the watcher first saw it; a batch's vanished and appeared files with the
  same bytes are a move. A save an editor announced (didSave) with those bytes is `editor`;
- each appended message of a session with a workspace becomes a TurnMark (on the event loop:
  a few attribute reads; the write goes to this module's own worker thread).

Nothing here runs file or database work on the event loop.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from tokend.core.checkpoints.turns import CheckpointConfig, FileChange, Origin, TurnMark, pair_moves
from tokend.core.compaction.prune import is_user_turn
from tokend.core.errors import InvalidParams, Stopping
from tokend.core.types import Message, ToolCallPart, ToolResultPart
from tokend.core.workspace.files import Seen
from tokend.service.checkpoints.file_states import TurnBytes, capture, state_change
from tokend.service.checkpoints.watched_paths import files_under
from tokend.service.foreground import Foreground
from tokend.service.ports import CheckpointIndex, WorkspaceFiles
from tokend.service.session.listeners import SessionEvent
from tokend.service.session.ports import SessionService
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.registry import Workspaces

log = logging.getLogger(__name__)

T = TypeVar("T")
EDITOR_SAVE_SECONDS = 5.0  # a watcher event this soon after a didSave of the path is the save
CREATED_AT_TRUST_SECONDS = 10.0  # a message's own time, when this close to now, times its mark
MOVE_SECONDS = 2.0  # a file that vanished this long before one with its bytes appeared: a move
WALK_BATCH = 1000  # files of a first walk read, saved and recorded at a time
CLOSE_SECONDS = 3.0  # for the checkpoint thread to finish what it is doing at close


class Checkpoints:
    def __init__(
        self,
        service: SessionService,
        workspaces: Workspaces,
        store: CheckpointIndex,
        config: CheckpointConfig | None = None,
        *,
        files: WorkspaceFiles,
        foreground: Foreground | None = None,
    ) -> None:
        self.service = service
        self.foreground = foreground or Foreground()  # requests the first walk lets go first
        self.workspaces = workspaces
        self.store = store
        self.files = files  # every read and write of a workspace's files (restores too)
        self.config = config or CheckpointConfig()
        self._locks: dict[str, threading.RLock] = {}
        self._walked: set[str] = set()
        self._turns: dict[str, TurnBytes] = {}
        self._saves: dict[tuple[str, str], tuple[str, float]] = {}  # (ws, path) -> (sha, at)
        self._opened: set[str] = set()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokend-checkpoints")
        # Who hears of the restores settled at start (restore_journal): a connection's server,
        # held weakly, and how to tell it (on the event loop).
        self.restore_listeners: weakref.WeakKeyDictionary[Any, Callable[[Any, str], None]] = (
            weakref.WeakKeyDictionary()
        )
        workspaces.own_folders.append(store.folder)  # never checkpoint the checkpoints
        workspaces.built_hooks.append(self.on_built)
        workspaces.batch_hooks.append(self.on_batch)
        workspaces.editor_hooks.append(self.on_editor)
        workspaces.released_hooks.append(self.on_released)
        service.listeners.subscribe_every(self.on_change)

    def lock(self, workspace: str) -> threading.RLock:
        return self._locks.setdefault(workspace, threading.RLock())

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """Run `work` on the checkpoint thread, after everything submitted before it."""
        return self._worker.submit(work)

    def walked(self, workspace: str) -> bool:
        return workspace in self._walked

    # -- the workspace's files --------------------------------------------------------------

    def on_built(self, index: WorkspaceIndex) -> None:
        """Save every file of the first walk; log what changed while nobody watched. Written
        WALK_BATCH files at a time, so the walk holds one batch's states, not the tree's."""
        ws, now = index.uri, time.time()
        _yield_the_cpu()  # a big tree's first walk is minutes of reading and compressing
        entries = index.entries()
        with self.lock(ws):
            paths = list(entries)
            for start in range(0, len(paths), WALK_BATCH):
                batch = paths[start : start + WALK_BATCH]
                known = self.store.baseline(ws, batch)
                seen: dict[str, Seen | None] = {}
                changes = []
                for rel in batch:
                    time.sleep(0)  # hand the interpreter to the event loop between files
                    self.foreground.yield_to()  # and a repo map being served goes first
                    _check_open(index)
                    entry, old = entries[rel], known.get(rel)
                    if old and (old.size, old.mtime_ns) == (entry.size_bytes, entry.mtime_ns):
                        continue
                    state, note = self.capture(index.root, rel, None, fast=True)
                    seen[rel] = state
                    if old and state and old.sha != state.sha:
                        changes.append(state_change(rel, old, state, now, "unwatched", note))
                self.store.set_baseline(ws, seen)
                self.store.add_changes(ws, changes)
            left = [
                rel
                for rel in self.store.baseline_paths(ws)
                if rel not in entries
                and not (index.root / rel).is_file()
                and not index.rules.own.owns(rel)  # tokend's own: neither user's nor deleted
            ]
            known = self.store.baseline(ws, left)
            self.store.set_baseline(ws, dict.fromkeys(left))
            self.store.add_changes(
                ws, [state_change(rel, known[rel], None, now, "unwatched", None) for rel in left]
            )
            self._walked.add(ws)
        self.store.prune(now - self.config.retention_days * 86400)

    def capture(
        self, root: Path, rel: str, turn: TurnBytes | None, *, fast: bool = False
    ) -> tuple[Seen | None, str | None]:
        """A file's state now, its bytes saved unless a cap says no (file_states.capture)."""
        return capture(self.files, self.store, self.config, root, rel, turn, fast=fast)

    def on_batch(
        self, index: WorkspaceIndex, paths: frozenset[Path], times: Mapping[Path, float]
    ) -> None:
        ws = index.uri
        with self.lock(ws):
            if ws not in self._walked:
                return  # the first walk, still to come, reads these files as they are now
            when: dict[str, float] = {}
            for path in paths:
                try:
                    rel = path.relative_to(index.root).as_posix()
                except ValueError:
                    continue
                for found in files_under(index, self.store, rel):
                    when[found] = min(times.get(path, time.time()), when.get(found, 1e18))
            known = self.store.baseline(ws, sorted(when))
            turn = self._turns.setdefault(ws, TurnBytes())
            seen: dict[str, Seen | None] = {}
            changes = []
            for rel in sorted(when):
                time.sleep(0)  # hand the interpreter to the event loop between files
                _check_open(index)
                old = known.get(rel)
                state, note = self.capture(index.root, rel, turn)
                seen[rel] = state
                if (old and old.sha) == (state and state.sha):
                    continue
                origin = self._origin(ws, rel, state, when[rel])
                changes.append(state_change(rel, old, state, when[rel], origin, note))
            self.store.set_baseline(ws, seen)
            self.store.add_changes(ws, self._paired(ws, changes))

    def _paired(self, ws: str, changes: list[FileChange]) -> list[FileChange]:
        """The batch's changes with moves named, also a move whose other end came in an
        earlier batch (a move into a folder the watcher had not watched yet: the new folder's
        batch may even come first)."""
        if not changes:
            return changes
        since = min(c.at for c in changes) - MOVE_SECONDS
        recent = [
            c
            for c in self.store.changes(ws, since)
            if not c.moved_to
            and not c.moved_from
            and ((c.after is None) != (c.before is None))  # a deletion or a creation
        ]
        paired = pair_moves([*recent, *changes])
        for old, new in zip(recent, paired, strict=False):
            if (new.moved_to, new.moved_from) != (old.moved_to, old.moved_from):
                self.store.set_moved(old.seq, new.moved_from, new.moved_to)
        return paired[len(recent) :]

    def _origin(self, ws: str, rel: str, state: Seen | None, at: float) -> Origin:
        saved = self._saves.get((ws, rel))
        if saved and state and (saved[0] == state.sha or abs(at - saved[1]) < EDITOR_SAVE_SECONDS):
            del self._saves[(ws, rel)]
            return "editor"
        return "watch"

    def on_editor(self, index: WorkspaceIndex, rel: str, text: str | None, kind: str) -> None:
        """A didSave: the bytes the watcher is about to report are the user's (on the loop)."""
        if kind == "save" and text is not None:
            sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            self._saves[(index.uri, rel)] = (sha, time.time())

    # -- the sessions' messages -------------------------------------------------------------

    def on_change(self, event: SessionEvent) -> None:
        """Mark the messages a change appended (on the loop: no I/O here)."""
        data = event.data
        uri = data.info.workspace_uri
        if not uri or not event.appended:
            return
        now = time.time()
        marks = [_mark(m, now) for m in event.appended]
        if uri not in self._opened:
            self._opened.add(uri)
            try:
                self.workspaces.open(uri)
            except Stopping:
                return
            except InvalidParams as exc:
                log.info("no checkpoints for %s: %s", uri, exc.message)
                return
        self._worker.submit(self._record_marks, data.id, uri, marks)

    def _record_marks(self, session_id: str, uri: str, marks: list[TurnMark]) -> None:
        try:
            ws = self.workspaces.key(uri)
        except InvalidParams:
            return
        for mark in marks:
            if mark.starts_turn:
                with self.lock(ws):
                    self._turns[ws] = TurnBytes()
            self.store.marks.add(session_id, ws, mark)

    def on_released(self, ws: str) -> None:
        """A workspace nobody uses was closed: opened again, it is walked again."""
        with self.lock(ws):
            self._walked.discard(ws)
        self._opened.clear()  # the next mark of any session opens its workspace again

    def close(self, seconds: float = CLOSE_SECONDS) -> None:
        """Drop the marks not yet written, let the one being written finish (the first walks
        and batches stop at their next file: their workspaces are closed first)."""
        self._worker.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + seconds
        for thread in list(getattr(self._worker, "_threads", ())):
            thread.join(max(0.0, deadline - time.monotonic()))


def _check_open(index: WorkspaceIndex) -> None:
    if index.closed:
        raise Stopping(f"{index.root} was closed: its checkpoints stop here")


def _mark(message: Message, now: float) -> TurnMark:
    created = message.created_at.timestamp()
    at = created if now - CREATED_AT_TRUST_SECONDS <= created <= now else now
    kinds = [type(sp.part) for sp in message.parts]
    working = (message.role == "assistant" and ToolCallPart in kinds) or ToolResultPart in kinds
    return TurnMark(message.id, at, is_user_turn(message), working or message.role == "tool")


BACKGROUND_NICE = 10


def _yield_the_cpu() -> None:
    """Lower the calling thread's scheduling priority (Linux: a thread is its own task), so the
    requests of editors and agents go first on a busy machine. Only the index's build thread
    calls it, for the first walk, and that thread ends with it. Elsewhere nothing is done: on
    other systems the id would name a process."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        if current < BACKGROUND_NICE:
            os.setpriority(os.PRIO_PROCESS, tid, BACKGROUND_NICE)
    except OSError:
        pass
