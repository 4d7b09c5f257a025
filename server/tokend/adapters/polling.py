"""The polling half of adapters.watch: folders inotify could not watch, compared with their
last snapshot every POLL_SECONDS by one thread."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from watchdog.utils.dirsnapshot import (
    DirectorySnapshot,
    DirectorySnapshotDiff,
    EmptyDirectorySnapshot,
)

from tokend.core.workspace.own_paths import OwnPaths

POLL_SECONDS = 1.0


class Poller:
    """One thread that snapshots some folders (recursively unless told otherwise) every
    POLL_SECONDS and reports every path created, deleted, modified or moved since the last
    look."""

    def __init__(
        self,
        folders: list[Path],
        add: Callable[[Path], None],
        own: OwnPaths | None = None,
        recursive: bool = True,
    ) -> None:
        self._folders = list(folders)
        self._add = add
        self._own = own
        self._recursive = recursive
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._snapshots = {f: self._snapshot(f) for f in folders}
        self.thread = threading.Thread(target=self._run, name="tokend-poll", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def add(self, folders: list[Path]) -> None:
        """Poll `folders` too, from their state now."""
        taken = {f: self._snapshot(f) for f in folders}
        with self._lock:
            self._snapshots.update(taken)
            self._folders.extend(folders)

    def _run(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            with self._lock:
                folders = list(self._folders)
            for folder in folders:
                now = self._snapshot(folder)
                diff = DirectorySnapshotDiff(self._snapshots[folder], now)
                self._snapshots[folder] = now
                for group in (diff.files_created, diff.files_deleted, diff.files_modified,
                              diff.dirs_created, diff.dirs_deleted):  # fmt: skip
                    for raw in group:
                        self._add(Path(os.fsdecode(raw)))
                for pair in (*diff.files_moved, *diff.dirs_moved):
                    for raw in pair:
                        self._add(Path(os.fsdecode(raw)))

    def _snapshot(self, folder: Path) -> Any:
        """The folder's snapshot, without tokend's own folders."""
        own = self._own

        def listdir(path: str | None) -> Iterator[os.DirEntry[str]]:
            with os.scandir(path) as entries:
                for entry in entries:
                    if own is None or not own.owns_path(entry.path):
                        yield entry

        try:
            if own is not None and own.owns_path(folder):
                return EmptyDirectorySnapshot()
            return DirectorySnapshot(str(folder), recursive=self._recursive, listdir=listdir)
        except OSError:  # gone (or unreadable) since: nothing under it to report
            return EmptyDirectorySnapshot()
