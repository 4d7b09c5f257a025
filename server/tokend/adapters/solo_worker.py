"""One tag worker process kept for the big sources of small refreshes (adapters.tag_parsing:
a source over SOLO_BYTES is parsed in a worker even when one file is saved, not in the daemon's
thread). Starting a worker costs an interpreter's start and tree-sitter's grammars (0.3-0.8 s
on the shared machine, issue 22): an edit loop on a big file paid it at every save. The worker
is kept IDLE_S after its last parse, then ended; closing the workspace ends it at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from tokend.adapters.tag_workers import TagWorkers, Work

IDLE_S = 30.0


class SoloWorker:
    def __init__(self, stopping: threading.Event, idle_s: float = IDLE_S) -> None:
        self._stopping = stopping
        self.idle_s = idle_s
        self._lock = threading.Lock()  # one parse at a time; guards the fields below
        self._workers: TagWorkers | None = None
        self._timer: threading.Timer | None = None
        self._uses = 0  # parses so far: an idle timer ends the worker only if none came since
        self.started = 0  # worker pools started (one process each)

    def parse_json(self, work: Sequence[Work]) -> list[str]:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            if self._workers is None:
                self._workers = TagWorkers(1, stopping=self._stopping)
                self.started += 1
            self._uses += 1
            try:
                return self._workers.parse_json(work)
            finally:
                self._timer = threading.Timer(self.idle_s, self._idle, (self._uses,))
                self._timer.daemon = True
                self._timer.start()

    def _idle(self, uses: int) -> None:
        with self._lock:
            if uses == self._uses:
                self._end()

    def close(self) -> None:
        """End the worker now (the workspace closed)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._end()

    def _end(self) -> None:
        workers, self._workers, self._timer = self._workers, None, None
        if workers is not None:
            workers.close()
