"""A watchdog inotify observer that places no watch in some folders (tokend's own).

watchdog's recursive inotify watch puts a watch on every folder under the root, and another on
every folder created later. A workspace holding tokend's data folder would then have a watch on
each of the checkpoint store's 256 blob folders, and the kernel would queue an event for every
blob and every SQLite commit tokend writes: work for nothing even when the events are dropped
later. Here the watch group's one method that adds watches (the first walk, a folder created or
moved in, the rebuild after a queue overflow: all go through it) skips the excluded folders and
everything under them. Events of the excluded folders themselves, seen from their parent's
watch, are still reported: the caller drops them (watcher.FolderWatcher).

Built on watchdog's inotify classes (Linux only); `pruned_observer` returns None where they are
missing or have changed shape, and the caller uses watchdog's plain Observer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Excluded = Callable[[bytes], bool]  # whether an absolute path is an excluded folder or under one

try:
    from watchdog.observers.api import DEFAULT_OBSERVER_TIMEOUT, BaseObserver
    from watchdog.observers.inotify import InotifyEmitter, InotifyObserver, InotifyWatchGroup
    from watchdog.observers.inotify_c import InotifyFD
except ImportError:  # not Linux
    InotifyWatchGroup = None  # type: ignore[assignment,misc]


def pruned_observer(excluded: Excluded) -> Any | None:
    """An observer whose recursive watches leave out what `excluded` says (None: this
    watchdog has no inotify watch group to prune; use the plain Observer)."""
    if InotifyWatchGroup is None or not callable(
        getattr(InotifyWatchGroup, "_add_all_callbacks", None)
    ):
        return None
    return _PrunedObserver(excluded)


if InotifyWatchGroup is not None:

    @dataclass
    class _PrunedWatchGroup(InotifyWatchGroup):
        excluded: Excluded = field(default=lambda path: False)

        def _add_all_callbacks(self, path: bytes) -> None:
            """watchdog's walk that adds a watch on `path` and, recursively, on each folder
            under it (not through symlinks), without entering an excluded folder."""
            if self.excluded(path):
                return
            is_dir = os.path.isdir(path)
            self._add_callback(path)
            if not (is_dir and self.is_recursive):
                return
            for folder, subfolders, _files in os.walk(path, followlinks=self.follow_symlink):
                kept = []
                for name in subfolders:
                    full = os.path.join(folder, name)
                    if self.excluded(full):
                        continue
                    if not self.follow_symlink and os.path.islink(full):
                        continue
                    kept.append(name)
                    self._add_callback(full)
                subfolders[:] = kept

    class _PrunedEmitter(InotifyEmitter):
        def __init__(self, *args: Any, excluded: Excluded, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._excluded = excluded

        def on_thread_start(self) -> None:
            self._inotify = _PrunedWatchGroup(
                self._inotify_fd,
                os.fsencode(self.watch.path),
                is_recursive=self.watch.is_recursive,
                event_mask=self.get_event_mask_from_filter(),
                follow_symlink=self.watch.follow_symlink,
                excluded=self._excluded,
            )

    class _PrunedObserver(InotifyObserver):
        def __init__(self, excluded: Excluded) -> None:
            # InotifyObserver's own setup, with the pruning emitter in place of its emitter.
            self._inotify_fd = InotifyFD()
            self._inotify_fd.start()
            BaseObserver.__init__(
                self,
                _PrunedEmitter,
                timeout=DEFAULT_OBSERVER_TIMEOUT,
                inotify_fd=self._inotify_fd,
                excluded=excluded,
            )
