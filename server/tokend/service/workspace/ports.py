"""The seams of the workspaces (service.workspace.registry): how an index is opened on a folder
and how the folder is watched. The composition root (service/app.py) hands in the adapters'
(adapters.workspace_cache, adapters.own_folders, adapters.watcher); a test hands in fakes.
`WorkspaceService` is the service as the workspaces see it: the few parts of the bundle the
session files and the repo map call (the root's service.service.TokendService has them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from tokend.service.models.session_models import SessionModels
from tokend.service.session.changes import SessionChanges
from tokend.service.session.sessions import Sessions
from tokend.service.workers import Workers
from tokend.service.workspace.index import WorkspaceIndex

# (the paths changed, when each was first seen: wall-clock seconds), on the watch's thread
OnBatch = Callable[[frozenset[Path], Mapping[Path, float]], None]


class FolderWatch(Protocol):
    """A workspace folder's watcher: batches of changed paths from its own thread."""

    def start(self) -> None:
        """Watch from now on; OSError when the folder cannot be watched."""
        ...

    def stop(self) -> None: ...

    def join(self, timeout: float) -> None: ...


class WatchFolder(Protocol):
    """Builds the watcher of `index`'s folder (its own paths left out), calling `on_batch` with
    each batch and `on_notice` with what the user should know (a folder polled)."""

    def __call__(
        self, index: WorkspaceIndex, on_batch: OnBatch, on_notice: Callable[[str], None]
    ) -> FolderWatch: ...


class OpenIndex(Protocol):
    """The index of the workspace `key` on folder `root`, leaving out tokend's own folders
    (its data, state, cache and runtime folders, the store's file) and `own_folders`."""

    def __call__(self, key: str, root: Path, own_folders: Sequence[Path]) -> WorkspaceIndex: ...


class WorkspaceService(Protocol):
    models: SessionModels  # a session's settings and counter (session files, repo map)
    workers: Workers
    sessions: Sessions
    changes: SessionChanges  # a session's files and measured figures are written through it
