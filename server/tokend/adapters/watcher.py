"""A workspace folder watched with watchdog, its events coalesced into batches.

Every create / modify / delete / move under the root adds the paths it touches (both ends of
a move) to a pending set; opens and reads are not even asked of inotify (WATCHED_EVENTS). A
small batch (fewer than BULK_PATHS paths: saves) is handed to `on_batch` once no event came for
QUIET_SECONDS, and at most MAX_DELAY_SECONDS after its first event. A bulk change (a `git checkout`, a build) waits until BULK_QUIET_SECONDS pass without an
event, at most BULK_MAX_DELAY_SECONDS: 2,000 files rewritten arrive as one batch, not 2,000.
`on_batch` runs on the watcher's own thread.

When the system has no inotify watch left (fs.inotify.max_user_watches), only what could not be
watched is polled, every POLL_SECONDS, by one thread comparing directory snapshots: watchdog's
recursive watch refuses the root loudly (ENOSPC: the whole folder is polled) but skips the
subfolders it has no watch for silently, so after starting, the folders it watches are compared
with the tree and each topmost folder left out is polled with everything under it. `on_notice`
is told once, naming how many folders and the first few. A folder created or moved in later
that watchdog could not watch (skipped silently too) is polled from then on, and said once.

tokend's own folders inside the root (`own`: its data folder, when the workspace is the home
folder) get no inotify watch and are not polled, and any event naming them is dropped: what
tokend writes there is never a change of the workspace.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.utils.dirsnapshot import (
    DirectorySnapshot,
    DirectorySnapshotDiff,
    EmptyDirectorySnapshot,
)

from tokend.adapters.inotify_pruned import pruned_observer
from tokend.adapters.own_folders import OwnPaths

log = logging.getLogger(__name__)


class _StoppedEmitterNoise(logging.Filter):
    """watchdog logs an ERROR when an event is read while its emitter is being stopped (our
    stop, racing a save): nothing is lost that anyone still wants, so it is not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_StoppedEmitterNoise())

QUIET_SECONDS = 0.05
MAX_DELAY_SECONDS = 0.2
BULK_PATHS = 64
BULK_QUIET_SECONDS = 0.3
BULK_MAX_DELAY_SECONDS = 5.0
POLL_SECONDS = 1.0
NAMED_IN_NOTICE = 3  # polled folders the notice names

Batch = Callable[[frozenset[Path]], None]
# What changes a file; not opens and reads: asked of inotify, a tree read whole (the tags, the
# checkpointer's first walk: 78,000 files on the kernel) overflowed its queue (16,384 events by
# default) and the saves among them were lost.
WATCHED_EVENTS = [
    FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent, DirModifiedEvent,
]  # fmt: skip


class _Collector(FileSystemEventHandler):
    def __init__(
        self, add: Callable[[Path], None], new_folder: Callable[[Path], None], own: OwnPaths
    ) -> None:
        self._add = add
        self._new_folder = new_folder
        self._own = own

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # reads change nothing
        paths = [
            Path(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
            for raw in (event.src_path, getattr(event, "dest_path", ""))
            if raw and not self._own.owns_path(raw)
        ]
        if not paths:
            return  # tokend's own files
        for path in paths:
            self._add(path)
        if event.is_directory and event.event_type in ("created", "moved"):
            self._new_folder(paths[-1])  # watchdog tried to watch it before telling us


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
        self._on_notice = on_notice
        self._pending: set[Path] = set()
        self._first: float | None = None
        self._last = 0.0
        self._cond = threading.Condition()
        self._stopped = False
        self.polling = False
        self.polled: list[Path] = []  # the topmost folders polled (everything under them too)
        self._observer: Any = None
        self._poller: _Poller | None = None
        self._poll_lock = threading.Lock()
        self._told_late = False  # the notice about folders that came later was given
        self._thread = threading.Thread(target=self._flush_loop, name="tokend-watch", daemon=True)

    def start(self) -> None:
        handler = _Collector(self._add, self._new_folder, self.own)
        unwatched: list[Path] = []
        reason = "fs.inotify.max_user_watches reached"
        try:
            observer = (self.own and pruned_observer(self.own.owns_path)) or Observer()
            observer.schedule(handler, str(self.root), recursive=True, event_filter=WATCHED_EVENTS)
            observer.daemon = True
            observer.start()
            self._observer = observer
            unwatched = unwatched_folders(observer, self.root, self.own)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EMFILE):
                raise
            unwatched, reason = [self.root], str(exc.strerror)
        if unwatched:
            self.polling = True
            self.polled = unwatched
            self._poller = _Poller(unwatched, self._add, self.own)
            self._poller.start()
            named = ", ".join(
                p.relative_to(self.root).as_posix() or "." for p in unwatched[:NAMED_IN_NOTICE]
            )
            extra = len(unwatched) - NAMED_IN_NOTICE
            more = f" and {extra} more" if extra > 0 else ""
            self._on_notice(
                f"cannot watch all of {self.root} with inotify ({reason}: raise "
                f"fs.inotify.max_user_watches); polling every {POLL_SECONDS:g} s the "
                f"{len(unwatched)} folder(s) left unwatched, with everything under them: "
                f"{named}{more}"
            )
        self._thread.start()

    def _new_folder(self, folder: Path) -> None:
        """A folder created or moved in: watchdog skips silently what it has no inotify watch
        for, so what it did not watch of it is polled from now on, and said once."""
        if self._observer is None or self._stopped:
            return
        with self._poll_lock:
            if any(folder == p or p in folder.parents for p in self.polled):
                return  # polled already, with everything under it
            missing = unwatched_folders(self._observer, folder, self.own)
            if not missing:
                return
            if self._poller is None:
                self._poller = _Poller([], self._add, self.own)
                self._poller.start()
            self._poller.add(missing)
            self.polled.extend(missing)
            self.polling = True
            tell, self._told_late = not self._told_late, True
        if tell:
            named = ", ".join(
                p.relative_to(self.root).as_posix() for p in missing[:NAMED_IN_NOTICE]
            )
            self._on_notice(
                f"cannot watch new folders of {self.root} with inotify (no watch left: raise "
                f"fs.inotify.max_user_watches); polling every {POLL_SECONDS:g} s {named}, and "
                "any further folder left unwatched without another notice"
            )

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
        if self._poller is not None:
            self._poller.stop()

    def join(self, timeout: float) -> None:
        """Wait (up to `timeout` seconds in all) for the watcher's threads to end after stop():
        watchdog's observer and emitters (their inotify instance closed), the batch thread
        (which finishes the batch it is handing over), the poller."""
        deadline = time.monotonic() + timeout
        threads: list[threading.Thread] = [self._thread]
        if self._observer is not None:
            threads.append(self._observer)
        if self._poller is not None:
            threads.append(self._poller._thread)
        for thread in threads:
            if thread.ident is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


def unwatched_folders(observer: Any, root: Path, own: OwnPaths | None = None) -> list[Path]:
    """The topmost folders under `root` that `observer`'s inotify watches do not cover (in
    walk order), tokend's own folders (`own`) aside. Read from the watch groups of watchdog's
    inotify emitters; an observer that does not show them (another platform's) is taken to
    watch everything."""
    watched: set[str] = set()
    for emitter in list(getattr(observer, "emitters", ())):
        group = getattr(emitter, "_inotify", None)
        paths = getattr(group, "_active_callbacks_by_path", None)
        if paths is None:
            return []
        watched.update(os.fsdecode(p) for p in list(paths))
    missing: list[Path] = []
    for folder, subfolders, _files in os.walk(root):
        if own is not None and own.owns_path(folder):
            subfolders[:] = []
            continue
        if folder not in watched:
            missing.append(Path(folder))
            subfolders[:] = []  # polled with everything under it
        else:
            subfolders[:] = [d for d in subfolders if not os.path.islink(os.path.join(folder, d))]
    return missing


class _Poller:
    """One thread that snapshots some folders (recursively) every POLL_SECONDS and reports
    every path created, deleted, modified or moved since the last look."""

    def __init__(
        self, folders: list[Path], add: Callable[[Path], None], own: OwnPaths | None = None
    ) -> None:
        self._folders = list(folders)
        self._add = add
        self._own = own
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._snapshots = {f: _snapshot(f, own) for f in folders}
        self._thread = threading.Thread(target=self._run, name="tokend-poll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def add(self, folders: list[Path]) -> None:
        """Poll `folders` too, from their state now."""
        taken = {f: _snapshot(f, self._own) for f in folders}
        with self._lock:
            self._snapshots.update(taken)
            self._folders.extend(folders)

    def _run(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            with self._lock:
                folders = list(self._folders)
            for folder in folders:
                now = _snapshot(folder, self._own)
                diff = DirectorySnapshotDiff(self._snapshots[folder], now)
                self._snapshots[folder] = now
                for group in (diff.files_created, diff.files_deleted, diff.files_modified,
                              diff.dirs_created, diff.dirs_deleted):  # fmt: skip
                    for raw in group:
                        self._add(Path(os.fsdecode(raw)))
                for pair in (*diff.files_moved, *diff.dirs_moved):
                    for raw in pair:
                        self._add(Path(os.fsdecode(raw)))


def _snapshot(folder: Path, own: OwnPaths | None = None) -> Any:
    """The folder's snapshot, recursive, without tokend's own folders."""

    def listdir(path: str | None) -> Iterator[os.DirEntry[str]]:
        with os.scandir(path) as entries:
            for entry in entries:
                if own is None or not own.owns_path(entry.path):
                    yield entry

    try:
        if own is not None and own.owns_path(folder):
            return EmptyDirectorySnapshot()
        return DirectorySnapshot(str(folder), recursive=True, listdir=listdir)
    except OSError:  # gone (or unreadable) since: nothing under it to report
        return EmptyDirectorySnapshot()
