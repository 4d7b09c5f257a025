"""The repository's history for the map's `cochange` (core.repomap.cochange), read on a thread of
its own: the first time beside the first build's tags (git's walk of its newest commits, a
second on a large history, is not added to the first map's wait), again whenever a map is asked
for after the history moved (a commit, a checkout, a pull: the port's `history_mark`), the maps
in the meantime ranked with the history before. A stop kills git (adapters.git_history); what
it had not read is no history."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from tokend.core.repomap.cochange import History
from tokend.core.repomap.graph import RepoGraph
from tokend.service.workspace.tree_ports import IndexPorts


class HistoryRead:
    """`graph()` under `lock`: the graph each history read is handed to (WorkspaceTags')."""

    def __init__(self, ports: IndexPorts, root: Path, stopping: threading.Event,
                 graph: Callable[[], RepoGraph], lock: AbstractContextManager[object]) -> None:  # fmt: skip
        self._read, self._mark = ports.history, ports.history_mark
        self._root, self._stopping = root, stopping
        self._graph, self._graph_lock = graph, lock
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._seen: object = None  # the mark when the last read began
        self._done: History | None = None  # read and not yet handed over

    def start(self) -> None:
        """Begin a read, unless one is under way."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._seen = self._mark(self._root)
            self._thread = threading.Thread(target=self._run, name="tokend-history", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        history = History.of(self._read(self._root, self._stopping))
        with self._lock:
            if not self._stopping.is_set():  # (a read a stop cut short is not the history)
                self._done = history

    def fresh(self, wait: bool) -> None:
        """Hand the graph the history read since the last call, if any. `wait`: for the read
        under way (one is begun if none was); else a read is begun if the history moved since
        the last one began, and its history is for a later call (a later map)."""
        thread = self._thread
        if wait:
            if thread is None:
                self.start()
                thread = self._thread
            assert thread is not None
            thread.join()
        with self._lock:
            done, self._done = self._done, None
        if done is not None:
            with self._graph_lock:
                self._graph().set_history(done)  # (its version moves: no map kept is asked for)
        if not wait and thread is not None and not thread.is_alive():
            if self._mark(self._root) != self._seen:  # (after the hand-over: for a later call)
                self.start()

    def wait(self) -> None:
        """Until the read under way (if any) is done."""
        if (thread := self._thread) is not None:
            thread.join()
