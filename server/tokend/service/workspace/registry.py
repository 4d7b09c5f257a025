"""Workspaces: every workspace folder the daemon knows, shared by all connections.

`open(uri)` starts a folder's index once (built on a thread of its own, then watched); every
later connection naming the folder shares it. Figures that change (a watcher batch, an unsaved
buffer) are announced on the event loop: to the workspace's listeners (connections, which send
workspace/didChangeFileTokens) and to the sessions whose files or memory changed (a new
snapshot, budget/didChange).

tokend's own folders inside a workspace (its data folder, when the workspace is the home
folder) are found once when the workspace opens (the app's `open_index`) and left out by its
walk, its watcher, its checkpoints and its map.
Each workspace counts its users (`WorkspaceUser`: a connection; the lsp layer sets the one
being served in `serving`): `open` adds the user being served, `let_go` removes one, and a
workspace nobody uses any more is released (`release`: its build and watcher stopped, its
threads ended, its memory dropped). `close` stops them all, in bounded time, on the way out.

Where changes go (listeners, notices, session and editor hooks) is announcing.py's. The app
(service/app.py) builds the one Workspaces of a daemon and hooks the session files'
refresh into it (`session_hooks`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote, urlparse

from tokend.core.errors import InvalidParams, Stopping
from tokend.core.excerpt import excerpt
from tokend.service.workspace.announcing import Announcing
from tokend.service.workspace.closing import CLOSE_SECONDS, Releasing, WorkspaceUser, serving
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.ports import FolderWatch, OpenIndex, WatchFolder, WorkspaceService

log = logging.getLogger(__name__)

Progress = Callable[[str, str], None]  # (kind: "begin" | "report" | "end", message)
# (index, the batch's paths, when each was first seen: wall-clock seconds), on the hook thread
BatchHook = Callable[[WorkspaceIndex, frozenset[Path], Mapping[Path, float]], None]


def folder_of(uri: str) -> Path:
    """The local folder of a workspace URI; InvalidParams unless it is an existing folder."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise InvalidParams(f"workspaceUri must be a file:// URI, not {excerpt(uri)}")
    folder = Path(unquote(parsed.path))
    if not folder.is_dir():
        raise InvalidParams(f"workspaceUri {excerpt(uri)} is not a folder on this machine")
    return folder


class Workspaces(Releasing, Announcing):
    def __init__(
        self,
        service: WorkspaceService,
        *,
        open_index: OpenIndex,
        watch: WatchFolder,
        prepare_rank: Callable[[], None] = lambda: None,
    ) -> None:
        Releasing.__init__(self)
        Announcing.__init__(self)
        self.service = service
        self._open_index = open_index  # the app's: on its workspace cache (service/app.py)
        self._watch = watch
        # Before a repo map's rank (the app's: BLAS kept to one thread, adapters.blas)
        self.prepare_rank = prepare_rank
        self._indexes: dict[str, WorkspaceIndex] = {}
        self._watchers: dict[str, FolderWatch] = {}
        self._hook_workers: dict[str, ThreadPoolExecutor] = {}
        self._builders: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        # Raw batches (every path, ignored or not), in order on a thread of their own per
        # workspace (never the watcher's: a slow hook must not hold back the figures); the end
        # of a first build, on the build's thread (editors' buffer events: Announcing).
        self.batch_hooks: list[BatchHook] = []
        self.built_hooks: list[Callable[[WorkspaceIndex], None]] = []
        # Folders of tokend's own besides its data, state, cache and runtime folders and the
        # store's SQLite file (a checkpoint store kept elsewhere): never indexed nor watched.
        self.own_folders: list[Path] = []

    def key(self, uri: str) -> str:
        return folder_of(uri).resolve().as_uri()

    def get(self, uri: str) -> WorkspaceIndex | None:
        """The index of an open workspace (None when nobody opened it)."""
        try:
            return self._indexes.get(self.key(uri))
        except InvalidParams:
            return None

    def open(
        self, uri: str, progress: Progress | None = None, user: WorkspaceUser | None = None
    ) -> WorkspaceIndex:
        """The folder's index, started (walk, tags, watcher) on first use; `user` (default:
        the one being served) counts as one of its users from now on."""
        self._remember_loop()
        key = self.key(uri)
        user = user if user is not None else serving.get()
        with self._lock:
            if self._closed:
                raise Stopping("tokend is stopping: no workspace is opened any more")
            if user is not None and not user.gone:
                self._users.setdefault(key, set()).add(user)
            index = self._indexes.get(key)
            if index is not None:
                return index
            root = folder_of(uri).resolve()
            index = self._open_index(key, root, self.own_folders)
            index.buffer_applied = lambda rel, figures: self._on_loop(self.announce)(
                index, {rel}, figures
            )
            self._indexes[key] = index
            builder = self._builders[key] = threading.Thread(
                target=self._build, args=(index, progress), name="tokend-index", daemon=True
            )
        builder.start()
        return index

    def _build(self, index: WorkspaceIndex, progress: Progress | None) -> None:
        tell = self._on_loop(progress) if progress else None
        if tell:
            tell("begin", f"indexing {index.root.name}")
        watcher = self._watch(
            index,
            lambda paths, times: self._on_batch(index, paths, times),
            lambda notice: self._notice(index, notice),
        )
        try:
            watcher.start()  # before the walk: nothing changed during it is missed
            with self._lock:
                if index.closed:  # released (or stopping) while the watcher started
                    raise Stopping("closed")
                self._watchers[index.uri] = watcher
        except Stopping:
            watcher.stop()
            watcher.join(CLOSE_SECONDS)
            return
        except OSError as exc:
            self._notice(index, f"cannot watch {index.root}: {exc}; its figures will not update")
        try:
            self.prepare_rank()  # here, not in the first map's request (threadpoolctl: 6 ms)
            index.build(lambda message: tell("report", message) if tell else None)
        except Stopping:
            return  # closed: nobody waits for progress or hooks
        except Exception:
            log.exception("indexing %s failed", index.root)
            index.ready.set()
        if index.closed:
            return
        if tell:  # the index and the map are ready: what the hooks do after is theirs
            failed = index.tags.failed
            tell(
                "end",
                f"indexing failed ({failed})"
                if failed
                else f"{len(index.entries()):,} files indexed",
            )
        for built in list(self.built_hooks):
            try:
                built(index)
            except Stopping:
                return
            except Exception:
                log.exception("a build hook failed for %s", index.root)

    async def ready(self, uri: str, progress: Progress | None = None) -> WorkspaceIndex:
        """The folder's index once its first build is done (waits off the event loop)."""
        index = self.open(uri, progress)
        if not index.ready.is_set():
            await asyncio.get_running_loop().run_in_executor(None, index.ready.wait)
        index.check_open()  # close() wakes the waiters: a stop answers them
        return index

    async def settled(self, index: WorkspaceIndex, paths: Iterable[str] | None = None) -> None:
        """Once the editors' buffers of `paths` (all, when None) sent so far are applied to
        `index` (waits off the event loop): a request sees the changes sent before it."""
        jobs = index.buffers.pending(paths)
        if jobs:  # awaited as they are (no thread held waiting); a cancelled request leaves
            # them be (shield: a wrapped job not yet started would be cancelled with it)
            waits = [asyncio.shield(asyncio.wrap_future(job)) for job in jobs]
            await asyncio.gather(*waits, return_exceptions=True)

    def index_for(self, path: Path) -> tuple[WorkspaceIndex, str] | None:
        """The open workspace holding an absolute path, and the path relative to it."""
        best: tuple[WorkspaceIndex, str] | None = None
        for index in list(self._indexes.values()):
            try:
                rel = path.relative_to(index.root).as_posix()
            except ValueError:
                continue
            if best is None or len(rel) < len(best[1]):
                best = (index, rel)
        return best

    def _on_batch(
        self, index: WorkspaceIndex, paths: frozenset[Path], times: Mapping[Path, float]
    ) -> None:
        """A watcher batch (on the watcher's thread): the index first, and its figures
        announced; the batch hooks (checkpoints: reading and saving files) after, on the
        workspace's hook thread, so a hook still busy (the first walk's checkpoint of a
        kernel-sized tree) never delays a change notification."""
        if index.closed:
            return
        changed = index.apply_changes(paths)
        if changed:
            self._on_loop(self.announce)(index, changed)
        if self.batch_hooks and not index.closed:
            try:
                self._hook_worker(index).submit(self._run_batch_hooks, index, paths, times)
            except RuntimeError:  # shut down meanwhile: the workspace is closing
                pass

    def _hook_worker(self, index: WorkspaceIndex) -> ThreadPoolExecutor:
        with self._lock:
            if index.closed:
                raise RuntimeError("closed")
            worker = self._hook_workers.get(index.uri)
            if worker is None:
                worker = self._hook_workers[index.uri] = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="tokend-batch-hooks"
                )
            return worker

    def _run_batch_hooks(
        self, index: WorkspaceIndex, paths: frozenset[Path], times: Mapping[Path, float]
    ) -> None:
        for hook in list(self.batch_hooks):
            if index.closed:
                return
            try:
                hook(index, paths, times)
            except Stopping:
                return
            except Exception:
                log.exception("a batch hook failed for %s", index.root)
