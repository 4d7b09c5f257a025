"""A workspace folder watched (adapters.watch: watchdog, and polling where inotify cannot), its
changes coalesced into batches.

Every path a change touches (both ends of a move) joins a pending set. A small batch (fewer than
BULK_PATHS paths: saves) is handed to `on_batch` once no event came for QUIET_SECONDS, and at
most MAX_DELAY_SECONDS after its first event. A bulk change (a `git checkout`, a build) waits
until BULK_QUIET_SECONDS pass without an event, at most BULK_MAX_DELAY_SECONDS: 2,000 files
rewritten arrive as one batch, not 2,000. `on_batch` runs on the watcher's own thread.

What inotify cannot watch is polled, and `on_notice` told once (adapters.watch); tokend's own
folders inside the root (`own`) are neither watched nor polled, and never in a batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tokend.adapters.watch import PathWatch
from tokend.core.workspace.own_paths import OwnPaths

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.05
MAX_DELAY_SECONDS = 0.2
BULK_PATHS = 64
BULK_QUIET_SECONDS = 0.3
BULK_MAX_DELAY_SECONDS = 5.0

Batch = Callable[[frozenset[Path]], None]


class FolderWatcher:
    def __init__(
        self,
        root: Path,
        on_batch: Batch,
        on_notice: Callable[[str], None],
        own: OwnPaths | None = None,
    ) -> None:
        self.root = root
        self.own = own if own is not None else OwnPaths(root, ())
        self._on_batch = on_batch
        self._pending: set[Path] = set()
        self._first: float | None = None
        self._last = 0.0
        self._cond = threading.Condition()
        self._stopped = False
        self._watch = PathWatch(root, self._add, on_notice, self.own)
        self._thread = threading.Thread(target=self._flush_loop, name="tokend-watch", daemon=True)

    @property
    def polling(self) -> bool:
        """Some of the folder is polled (inotify could not watch it all)."""
        return self._watch.polling

    @property
    def polled(self) -> list[Path]:
        """The topmost folders polled (everything under them too)."""
        return self._watch.polled

    def start(self) -> None:
        self._watch.start()
        self._thread.start()

    def _add(self, path: Path) -> None:
        with self._cond:
            now = time.monotonic()
            if not self._pending:
                self._first = now
            self._pending.add(path)
            self._last = now
            self._cond.notify()

    def _flush_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                now = time.monotonic()
                first = self._first if self._first is not None else now
                if len(self._pending) < BULK_PATHS:
                    due = min(self._last + QUIET_SECONDS, first + MAX_DELAY_SECONDS)
                else:
                    due = min(self._last + BULK_QUIET_SECONDS, first + BULK_MAX_DELAY_SECONDS)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                batch = frozenset(self._pending)
                self._pending.clear()
                self._first = None
            try:
                self._on_batch(batch)
            except Exception:  # one bad batch must not stop the watching
                log.exception("applying a batch of %d changed paths failed", len(batch))

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._watch.stop()

    def join(self, timeout: float) -> None:
        """Wait (up to `timeout` seconds in all) for the watcher's threads to end after stop():
        watchdog's observer and emitters (their inotify instance closed), the batch thread
        (which finishes the batch it is handing over), the poller."""
        deadline = time.monotonic() + timeout
        threads = [self._thread, *self._watch.threads()]
        for thread in threads:
            if thread.ident is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


class TimedFolderWatcher(FolderWatcher):
    """A FolderWatcher that also remembers when each pending path was first seen, so a batch
    handed over late (debounced) still says when its changes happened (wall-clock seconds)."""

    def __init__(
        self,
        root: Path,
        on_batch: Callable[[frozenset[Path], Mapping[Path, float]], None],
        on_notice: Callable[[str], None],
        own: OwnPaths | None = None,
    ) -> None:
        self.first_seen: dict[Path, float] = {}
        super().__init__(root, lambda paths: on_batch(paths, self._times_of(paths)), on_notice, own)

    def _add(self, path: Path) -> None:
        self.first_seen.setdefault(path, time.time())
        super()._add(path)

    def _times_of(self, batch: frozenset[Path]) -> dict[Path, float]:
        now = time.time()
        return {path: self.first_seen.pop(path, now) for path in batch}
