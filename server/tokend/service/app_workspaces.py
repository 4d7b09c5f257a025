"""The composition root's second half (service/app.py's): the parts that work on workspace
folders, built when an app serves or opens folders, each handed the adapters it works through:
the workspaces (their indexes on the workspace cache, each reading its folder's files and
parsing their tags through `index_ports()`, tokend's own folders left out, watchers,
BLAS kept to one thread for the repo map's rank), the followers (their watches) and the
checkpointer (its store, the workspace's files)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokend.adapters import blas, sparse_product, workspace_fs
from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.adapters.file_index import FolderTree
from tokend.adapters.git_history import history_mark, read_history
from tokend.adapters.own_folders import own_paths_inside, sqlite_file_of
from tokend.adapters.tag_parsing import TagParsing
from tokend.adapters.watch import PathWatch
from tokend.adapters.watcher import TimedFolderWatcher
from tokend.adapters.workspace_cache import WorkspaceCache, default_cache_path
from tokend.service.checkpoints.recorder import Checkpoints
from tokend.service.foreground import Foreground
from tokend.service.service import TokendService
from tokend.service.transcripts.followers import Followers
from tokend.service.workspace import session_files
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.ports import FolderWatch, OnBatch
from tokend.service.workspace.registry import Workspaces
from tokend.service.workspace.tree_ports import IndexPorts


@dataclass(eq=False)
class WorkspaceParts:
    """What works on workspace folders: their indexes, the transcripts followed, checkpoints."""

    workspaces: Workspaces
    followers: Followers
    checkpoints: Checkpoints | None  # a serving app's, or `tokend checkpoints`'
    remeasures: session_files.Remeasures  # the sessions' files re-measured after changes


def index_ports(foreground: Foreground | None = None) -> IndexPorts:
    """What a workspace index works through: its folder's files under the ignore rules, the
    workspace's files read for the map, tree-sitter's tag parsing (one per index), and the
    process's requests being served (its counting lets them go first), SciPy's compiled
    product for a large tree's rank, and git's history of the folder (the map's `cochange`)."""
    return IndexPorts(
        FolderTree,
        workspace_fs,
        TagParsing,
        foreground or Foreground(),
        sparse_product.compiled_product,
        read_history,
        history_mark,
    )


def workspace_parts(
    service: TokendService,
    checkpoint_store: CheckpointStore | None,
    workspace_cache: WorkspaceCache | None,
) -> WorkspaceParts:
    """The workspaces (each folder's index on `workspace_cache`, else the user's; its watcher;
    the session files kept fresh), the followers and, given a `checkpoint_store`, the
    checkpointer, each handed the adapters it works through."""
    cache = workspace_cache or WorkspaceCache(default_cache_path())
    foreground = Foreground()  # the maps being served, which background work lets go first

    def open_index(key: str, root: Path, own_folders: Sequence[Path]) -> WorkspaceIndex:
        own = own_paths_inside(root, sqlite_file_of(service.store), own_folders)
        return WorkspaceIndex(key, root, cache, index_ports(foreground), own)

    def watch(
        index: WorkspaceIndex, on_batch: OnBatch, on_notice: Callable[[str], None]
    ) -> FolderWatch:
        return TimedFolderWatcher(index.root, on_batch, on_notice, index.rules.own)

    workspaces = Workspaces(
        service, open_index=open_index, watch=watch, prepare_rank=blas.single_threaded
    )
    remeasures = session_files.Remeasures(workspaces)
    workspaces.session_hooks.append(remeasures.after_change)
    checkpoints = None
    if checkpoint_store is not None:
        config = service.config.checkpoints  # the user's settings: one store per user
        checkpoints = Checkpoints(
            service,
            workspaces,
            checkpoint_store,
            config,
            files=service.files,
            foreground=foreground,
        )
    followers = Followers(service, watch=PathWatch)
    return WorkspaceParts(workspaces, followers, checkpoints, remeasures)
