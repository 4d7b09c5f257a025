"""A workspace folder watched with watchdog, its events coalesced into batches.

Every create / modify / delete / move under the root adds the paths it touches (both ends of
a move) to a pending set. A small batch (fewer than BULK_PATHS paths: saves) is handed to
`on_batch` once no event came for QUIET_SECONDS, and at most MAX_DELAY_SECONDS after its first
event. A bulk change (a `git checkout`, a build) waits until BULK_QUIET_SECONDS pass without an
event, at most BULK_MAX_DELAY_SECONDS: 2,000 files rewritten arrive as one batch, not 2,000.
`on_batch` runs on the watcher's own thread.

When the system refuses more inotify watches (ENOSPC, fs.inotify.max_user_watches), the folder
is polled instead (watchdog's PollingObserver, every POLL_SECONDS), and `on_notice` is told
once, with the reason.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.05
MAX_DELAY_SECONDS = 0.2
BULK_PATHS = 64
BULK_QUIET_SECONDS = 0.3
BULK_MAX_DELAY_SECONDS = 5.0
POLL_SECONDS = 1.0

Batch = Callable[[frozenset[Path]], None]


class _Collector(FileSystemEventHandler):
    def __init__(self, add: Callable[[Path], None]) -> None:
        self._add = add

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads change nothing
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                self._add(Path(raw if isinstance(raw, str) else raw.decode("utf-8", "replace")))


class FolderWatcher:
    def __init__(self, root: Path, on_batch: Batch, on_notice: Callable[[str], None]) -> None:
        self.root = root
        self._on_batch = on_batch
        self._on_notice = on_notice
        self._pending: set[Path] = set()
        self._first: float | None = None
        self._last = 0.0
        self._cond = threading.Condition()
        self._stopped = False
        self.polling = False
        self._observer: Any = None
        self._thread = threading.Thread(target=self._flush_loop, name="tokend-watch", daemon=True)

    def start(self) -> None:
        handler = _Collector(self._add)
        try:
            observer = Observer()
            observer.schedule(handler, str(self.root), recursive=True)
            observer.daemon = True
            observer.start()
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EMFILE):
                raise
            self.polling = True
            self._on_notice(
                f"cannot watch {self.root} with inotify ({exc.strerror}: raise "
                "fs.inotify.max_user_watches); polling it every "
                f"{POLL_SECONDS:g} s instead"
            )
            observer = PollingObserver(timeout=POLL_SECONDS)
            observer.schedule(handler, str(self.root), recursive=True)
            observer.daemon = True
            observer.start()
        self._observer = observer
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
        if self._observer is not None:
            self._observer.stop()
