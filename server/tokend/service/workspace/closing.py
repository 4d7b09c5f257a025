"""Who uses a workspace, and how a workspace's background work is stopped.

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
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar

from tokend.adapters.watcher import FolderWatcher
from tokend.service.workspace.index import WorkspaceIndex

log = logging.getLogger(__name__)

CLOSE_SECONDS = 3.0  # for a closed workspace's threads to end (they check a flag between files)

Parts = tuple[
    WorkspaceIndex, FolderWatcher | None, ThreadPoolExecutor | None, threading.Thread | None
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
