"""The repository's history for the map's `cochange` (core.repomap.cochange), read once per
index on a thread of its own, beside the first build's tags: git's walk of its newest commits
(a second on a large history) is not added to the first map's wait. A stop kills git
(adapters.git_history); what it had not read is no history."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from tokend.core.repomap.cochange import History
from tokend.service.workspace.tree_ports import History as ReadHistory


class HistoryRead:
    def __init__(self, read: ReadHistory, root: Path, stopping: threading.Event) -> None:
        self._read, self._root, self._stopping = read, root, stopping
        self._thread: threading.Thread | None = None
        self._commits: Sequence[Sequence[str]] = ()
        self._taken = False

    def start(self) -> None:
        """Begin reading (the first time only)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tokend-history", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        self._commits = self._read(self._root, self._stopping)

    def take(self) -> History | None:
        """The history once it is read (waiting for it), the first time it is asked for; None
        after that."""
        if self._taken:
            return None
        self.start()
        assert self._thread is not None
        self._thread.join()
        self._taken = True
        return History.of(self._commits)
