"""One folder watched with watchdog, and polled where inotify cannot watch it: the one watchdog
adapter of the daemon (workspaces: adapters.watcher batches what it reports; followed agent
transcripts: service.transcripts.followers).

`PathWatch(root, on_path, on_notice, own, recursive)` calls `on_path(path)`, on watchdog's thread
or the poller's, for every path a create / modify / delete / move under `root` touches (both ends
of a move); opens and reads are not even asked of inotify (WATCHED_EVENTS). `recursive=False`
watches the files directly in `root` only.

When the system has no inotify left (fs.inotify.max_user_instances: the observer cannot start;
fs.inotify.max_user_watches: no watch for a folder), only what could not be watched is polled,
every POLL_SECONDS, by one thread comparing directory snapshots: the whole root when the
observer refuses it (ENOSPC, EMFILE), else each topmost folder watchdog's recursive watch skipped
silently, with everything under it. `on_notice` is told once, naming how many folders and the
first few. A folder created or moved in later that watchdog could not watch (skipped silently
too) is polled from then on, and said once.

tokend's own folders inside the root (`own`: its data folder, when the workspace is the home
folder) get no inotify watch and are not polled, and any event naming them is dropped: what
tokend writes there is never a change of the watched folder.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
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

from tokend.adapters.inotify_pruned import pruned_observer
from tokend.adapters.polling import POLL_SECONDS, Poller
from tokend.core.workspace.own_paths import OwnPaths

log = logging.getLogger(__name__)

__all__ = ["POLL_SECONDS", "WATCHED_EVENTS", "PathWatch", "unwatched_folders"]


class _StoppedEmitterNoise(logging.Filter):
    """watchdog logs an ERROR when an event is read while its emitter is being stopped (our
    stop, racing a save): nothing is lost that anyone still wants, so it is not logged.
    Installed on watchdog's logger when a watch starts (not when this module is imported);
    adding the one instance again changes nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


STOPPED_EMITTER_NOISE = _StoppedEmitterNoise()
INOTIFY_LOGGER = "watchdog.observers.inotify"

NAMED_IN_NOTICE = 3  # polled folders the notice names
# What changes a file; not opens and reads: asked of inotify, a tree read whole (the tags, the
# checkpointer's first walk: 78,000 files on the kernel) overflowed its queue (16,384 events by
# default) and the saves among them were lost.
WATCHED_EVENTS = [
    FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
    DirCreatedEvent, DirDeletedEvent, DirMovedEvent, DirModifiedEvent,
]  # fmt: skip
LIMITS = {errno.ENOSPC: "max_user_watches", errno.EMFILE: "max_user_instances"}

OnPath = Callable[[Path], None]


class _Collector(FileSystemEventHandler):
    def __init__(self, add: OnPath, new_folder: OnPath, own: OwnPaths) -> None:
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


class PathWatch:
    def __init__(
        self,
        root: Path,
        on_path: OnPath,
        on_notice: Callable[[str], None],
        own: OwnPaths | None = None,
        *,
        recursive: bool = True,
    ) -> None:
        self.root = root
        self.own = own if own is not None else OwnPaths(root, ())
        self.recursive = recursive
        self.polling = False
        self.polled: list[Path] = []  # the topmost folders polled (everything under them too)
        self._on_path = on_path
        self._on_notice = on_notice
        self._observer: Any = None
        self._poller: Poller | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self._told_late = False  # the notice about folders that came later was given

    def start(self) -> None:
        """Watch (or poll) from now on; an OSError other than a limit reached is raised."""
        logging.getLogger(INOTIFY_LOGGER).addFilter(STOPPED_EMITTER_NOISE)
        handler = _Collector(self._on_path, self._new_folder, self.own)
        unwatched: list[Path] = []
        limit = "max_user_watches"
        reason = f"fs.inotify.{limit} reached"
        try:
            observer = (self.own and pruned_observer(self.own.owns_path)) or Observer()
            observer.schedule(
                handler, str(self.root), recursive=self.recursive, event_filter=WATCHED_EVENTS
            )
            observer.daemon = True
            observer.start()
            self._observer = observer
            unwatched = unwatched_folders(observer, self.root, self.own, self.recursive)
        except OSError as exc:
            if exc.errno not in LIMITS:
                raise
            limit = LIMITS[exc.errno]
            unwatched, reason = [self.root], str(exc.strerror)
        if not unwatched:
            return
        with self._lock:
            self.polling = True
            self.polled = unwatched
            self._poller = Poller(unwatched, self._on_path, self.own, self.recursive)
            self._poller.start()
        named = ", ".join(
            p.relative_to(self.root).as_posix() or "." for p in unwatched[:NAMED_IN_NOTICE]
        )
        extra = len(unwatched) - NAMED_IN_NOTICE
        more = f" and {extra} more" if extra > 0 else ""
        under = ", with everything under them" if self.recursive else ""
        self._on_notice(
            f"cannot watch all of {self.root} with inotify ({reason}: raise "
            f"fs.inotify.{limit}); polling every {POLL_SECONDS:g} s the "
            f"{len(unwatched)} folder(s) left unwatched{under}: {named}{more}"
        )

    def _new_folder(self, folder: Path) -> None:
        """A folder created or moved in: watchdog skips silently what it has no inotify watch
        for, so what it did not watch of it is polled from now on, and said once."""
        if self._observer is None or self._stopped or not self.recursive:
            return
        with self._lock:
            if any(folder == p or p in folder.parents for p in self.polled):
                return  # polled already, with everything under it
            missing = unwatched_folders(self._observer, folder, self.own)
            if not missing:
                return
            if self._poller is None:
                self._poller = Poller([], self._on_path, self.own)
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

    def stop(self) -> None:
        """Stop watching and polling (the threads end soon after: `threads` to join them)."""
        self._stopped = True
        if self._observer is not None:
            self._observer.stop()
        with self._lock:
            if self._poller is not None:
                self._poller.stop()

    def threads(self) -> list[threading.Thread]:
        """The threads that end after stop(): watchdog's observer, the poller."""
        found: list[threading.Thread] = []
        if self._observer is not None:
            found.append(self._observer)
        if self._poller is not None:
            found.append(self._poller.thread)
        return found


def unwatched_folders(
    observer: Any, root: Path, own: OwnPaths | None = None, recursive: bool = True
) -> list[Path]:
    """The topmost folders under `root` (only `root` itself when not `recursive`) that
    `observer`'s inotify watches do not cover (in walk order), tokend's own folders (`own`)
    aside. Read from the watch groups of watchdog's inotify emitters; an observer that does not
    show them (another platform's) is taken to watch everything."""
    watched: set[str] = set()
    for emitter in list(getattr(observer, "emitters", ())):
        group = getattr(emitter, "_inotify", None)
        paths = getattr(group, "_active_callbacks_by_path", None)
        if paths is None:
            return []
        watched.update(os.fsdecode(p) for p in list(paths))
    if not recursive:
        return [] if str(root) in watched else [root]
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
