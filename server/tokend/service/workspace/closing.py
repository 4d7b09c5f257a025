"""Who uses a workspace, and how a workspace's background work is stopped.

`Releasing` is the part of the registry (Workspaces) that counts users and releases or closes
workspaces; the registry's build and batches check the index's flag it sets.

- `WorkspaceUser`: one user of workspaces (a connection); `serving` names the one whose request
  is being served (the lsp layer sets it in each connection's task), so whatever a request
  opens counts that connection as a user. Once `gone`, a user holds nothing and takes nothing.
- `Parts` are what runs for one workspace: its index (the build checks its `stopping` flag
  between files), its watcher, the thread its batch hooks run on, its build thread.
  `signal_stop` tells them all to stop and never waits (it may run on the event loop);
  `join_stopped` waits for their threads until a deadline and names any still running.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar

from tokend.core.errors import InvalidParams
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.ports import FolderWatch

log = logging.getLogger(__name__)

CLOSE_SECONDS = 3.0  # for a closed workspace's threads to end (they check a flag between files)

Parts = tuple[
    WorkspaceIndex, FolderWatch | None, ThreadPoolExecutor | None, threading.Thread | None
]


class WorkspaceUser:
    """One user of workspaces (a connection). Once `gone`, it holds none and takes none."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gone = False

    def __repr__(self) -> str:
        return f"WorkspaceUser({self.name!r})"


serving: ContextVar[WorkspaceUser | None] = ContextVar("tokend_workspace_user", default=None)
"""The user whose request is being served (set by the lsp layer in each connection's task)."""


def signal_stop(parts: Parts) -> None:
    """Tell the workspace's build, batches, watcher and hook thread to stop (no waiting)."""
    index, watcher, worker, _ = parts
    index.close()
    if watcher is not None:
        watcher.stop()
    if worker is not None:
        worker.shutdown(wait=False, cancel_futures=True)


def join_stopped(parts: Parts, deadline: float) -> None:
    """Wait for the stopped workspace's threads until `deadline` (time.monotonic())."""
    index, watcher, worker, builder = parts
    threads = [builder, *getattr(worker, "_threads", ())]
    if watcher is not None:
        watcher.join(max(0.0, deadline - time.monotonic()))
    for thread in threads:
        if thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    late = [t.name for t in threads if t is not None and t.is_alive()]
    if late:
        log.warning("%s: %s still running after close", index.root, ", ".join(late))


class Releasing:
    """Users per workspace, release of the unused ones, and close at the end (a base of
    Workspaces, whose tables it shares)."""

    _indexes: dict[str, WorkspaceIndex]
    _watchers: dict[str, FolderWatch]
    _hook_workers: dict[str, ThreadPoolExecutor]
    _builders: dict[str, threading.Thread]
    _listeners: dict[str, list[Callable[..., None]]]
    _notices: dict[str, list[Callable[[str], None]]]
    _lock: threading.Lock

    def __init__(self) -> None:
        self._users: dict[str, set[WorkspaceUser]] = {}
        self._reapers: list[threading.Thread] = []
        self._closed = False
        # called with a workspace's key once it is released (what a hook returns is ignored)
        self.released_hooks: list[Callable[[str], object]] = []

    def key(self, uri: str) -> str:
        raise NotImplementedError

    def users(self, uri: str) -> int:
        """How many users hold the workspace."""
        return len(self._users.get(self.key(uri), ()))

    def let_go(self, user: WorkspaceUser, uri: str | None = None) -> None:
        """`user` no longer uses the workspace `uri` (None: any; the user is then gone). Every
        workspace left without a user is released."""
        with self._lock:
            if uri is None:
                user.gone = True
                for users in self._users.values():
                    users.discard(user)
            else:
                try:
                    self._users.get(self.key(uri), set()).discard(user)
                except InvalidParams:
                    pass
            unused = [key for key in self._indexes if not self._users.get(key)]
        for key in unused:
            self.release(key)

    def release(self, key: str) -> None:
        """Close one workspace: its build and batches stop, its watcher and threads end (on a
        thread of their own, bounded by CLOSE_SECONDS: this may run on the event loop), and
        it is forgotten (the next `open` starts afresh)."""
        parts = self._take(key, unused_only=True)
        if parts is None:
            return
        log.info("workspace %s released: nobody uses it any more", parts[0].root)
        signal_stop(parts)
        reaper = threading.Thread(
            target=self._reap, args=(key, parts), name="tokend-release", daemon=True
        )
        with self._lock:
            self._reapers.append(reaper)
        reaper.start()

    def _take(self, key: str, unused_only: bool = False) -> Parts | None:
        with self._lock:
            if unused_only and self._users.get(key):
                return None  # someone opened it again meanwhile
            index = self._indexes.pop(key, None)
            parts = (
                index,
                self._watchers.pop(key, None),
                self._hook_workers.pop(key, None),
                self._builders.pop(key, None),
            )
            self._users.pop(key, None)
            self._listeners.pop(key, None)
            self._notices.pop(key, None)
        return None if index is None else parts  # type: ignore[return-value]

    def _reap(self, key: str, parts: Parts) -> None:
        join_stopped(parts, time.monotonic() + CLOSE_SECONDS)
        parts[0].forget()  # its objects now, not at the collector's next full pass
        with self._lock:
            current = threading.current_thread()
            self._reapers = [t for t in self._reapers if t is not current]
        for hook in list(self.released_hooks):
            try:
                hook(key)
            except Exception:
                log.exception("a release hook failed for %s", parts[0].root)

    def begin_close(self) -> None:
        """Refuse new workspaces and tell every build, batch and waiter to stop (no waiting:
        called on the event loop as the daemon starts stopping, so waiting requests get
        their answer)."""
        with self._lock:
            self._closed = True
            indexes = list(self._indexes.values())
        for index in indexes:
            index.close()

    def close(self, seconds: float = CLOSE_SECONDS) -> None:
        """Stop every workspace (builds, batches, watchers, hook threads) and wait up to
        `seconds` in all for their threads to end (and for workspaces released before)."""
        self.begin_close()
        with self._lock:
            keys = list(self._indexes)
        taken = [parts for key in keys if (parts := self._take(key)) is not None]
        for parts in taken:
            signal_stop(parts)
        deadline = time.monotonic() + seconds
        for parts in taken:
            join_stopped(parts, deadline)
        with self._lock:
            reapers = list(self._reapers)
        for reaper in reapers:
            reaper.join(max(0.0, deadline - time.monotonic()))
