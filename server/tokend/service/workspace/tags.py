"""WorkspaceTags: the tags of a workspace's source files and the repo map built from them.

Tags are kept by content hash in the workspace cache, and each file's (size, mtime, hash) too,
so a new process reads no unchanged file and parses nothing it parsed before. A changed file
is read and parsed alone; the graph re-derives only what depends on it (core.repomap). The
first build hands the graph one chunk of files at a time, so no more than a chunk's tags are
ever held as objects. The graph keeps no line text: a map's lines are read when it is made
(the unsaved buffer first, else the file on disk).
Fitted maps are kept per (graph version, focus, budget, counter): asking again is a lookup,
and a new focus re-ranks without re-reading the tree. An edit that leaves a file's tags as
they were (a comment, a function body) keeps every cached map but those showing that file.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tokend.adapters import workspace_fs
from tokend.adapters.tag_workers import POOL_MIN_FILES, WORKER_DIED, TagWorkers, parse_all
from tokend.adapters.tags import TagParser
from tokend.adapters.tags.queries import QUERIES_VERSION
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.errors import Stopping
from tokend.core.fileclass import DEFAULT_MAX_FILE_BYTES, FileEntry, language_of
from tokend.core.repomap import Focus, RepoGraph
from tokend.core.repomap_render import EXTRA_CANDIDATES, FittedMap, fit_map
from tokend.core.repomap_tags import FileTags

MAP_CACHE_ENTRIES = 64
CHUNK_FILES = 500  # files read and parsed between two cache writes and progress reports ...
CHUNK_BYTES = 8 << 20  # ... or fewer, once they hold this much source (a chunk of the kernel's
# register headers held 20,000 definitions a file: a chunk's tags, as objects, are bounded here)


class WorkspaceTags:
    def __init__(
        self,
        root: Path,
        cache: WorkspaceCache,
        overlay: Callable[[str], str | None] = lambda path: None,
        stopping: threading.Event | None = None,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes  # a bigger unsaved buffer is, like such a file, not mapped
        self._stopping = stopping or threading.Event()  # set: a build in progress gives up
        self._cache = cache
        self._overlay = overlay  # a path's unsaved text, if an editor has one
        self._parser = TagParser()
        self.pool_workers: int | None = None  # tag worker processes (None: one per core; 0: none)
        self._graph = RepoGraph()
        self._lock = threading.RLock()  # guards the graph and the map cache
        self._maps: OrderedDict[tuple[object, ...], FittedMap] = OrderedDict()
        self.errors: dict[str, str] = {}  # path -> why it has no tags
        self.ready = threading.Event()  # set once the first build's tags are in the graph

    def refresh(
        self,
        entries: Mapping[str, FileEntry],
        overlays: Mapping[str, str],
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Tag every source file of `entries` (the build); `progress(done, total)` after
        each chunk of files."""
        self.refresh_paths(set(entries) | set(overlays), entries, overlays, whole=True,
                           progress=progress)  # fmt: skip

    def refresh_paths(
        self,
        paths: Iterable[str],
        entries: Mapping[str, FileEntry],
        overlays: Mapping[str, str],
        *,
        whole: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Re-tag `paths` and hand the graph each chunk of files as it is read and parsed,
        so no more than a chunk's bytes and tags are held at once (the kernel: 800 MB of C).
        With `whole`, files the graph has and `paths` does not are removed."""
        wanted = sorted(paths)
        done = 0
        with self._workers_for(len(wanted)) as workers:
            for chunk in _chunks(wanted, entries, overlays):
                self._check_stopping()
                tags, reread = self._tag_chunk(chunk, entries, overlays, workers)
                with self._lock:
                    if self._graph.set_files(tags) or reread:
                        self._forget_maps_showing(set(tags))
                done += len(chunk)
                if progress is not None:
                    progress(done, len(wanted))
        if whole:
            with self._lock:
                gone = set(self._graph.paths) - set(wanted)
                if gone:
                    self._graph.set_files(dict.fromkeys(gone))

    def _workers_for(self, files: int) -> contextlib.AbstractContextManager[TagWorkers | None]:
        """Worker processes for a refresh of `files` files (the first build), ended with it;
        none for a few files (a save), which the calling thread parses."""
        if self.pool_workers == 0 or files < POOL_MIN_FILES:
            return contextlib.nullcontext()
        return TagWorkers(self.pool_workers or None, stopping=self._stopping)

    def _check_stopping(self) -> None:
        if self._stopping.is_set():
            raise Stopping("tokend is stopping: the repo map's tags were not finished")

    def _forget_maps_showing(self, paths: set[str]) -> None:
        """Drop the cached maps that show one of `paths` (their lines may have moved even when
        the graph did not change); maps of an older graph version are never asked for again."""
        for key in [k for k, m in self._maps.items() if paths.intersection(m.files)]:
            del self._maps[key]

    def _tag_chunk(
        self,
        paths: list[str],
        entries: Mapping[str, FileEntry],
        overlays: Mapping[str, str],
        workers: TagWorkers | None = None,
    ) -> tuple[dict[str, FileTags | None], bool]:
        """The tags of some files, and whether any was read anew (its content changed)."""
        root_key = str(self.root)
        known = self._cache.hashes(root_key, paths)
        new_hashes: dict[str, tuple[int, int, str]] = {}
        sources: dict[str, tuple[str, str, bytes | None]] = {}  # path -> (language, sha, bytes)
        removed: list[str] = []
        for path in paths:
            entry = entries.get(path)
            overlay = overlays.get(path)
            language = entry.language if entry else None
            if overlay is not None:
                language = language_of(path)
            if (
                language is None
                or (entry is None and overlay is None)
                or (entry is not None and entry.skipped and overlay is None)
            ):
                removed.append(path)
                continue
            if overlay is not None:
                data = overlay.encode("utf-8", "surrogatepass")
                if len(data) > self.max_bytes:  # 8 MB of words: 7 s of tree-sitter
                    self.errors[path] = (
                        f"an unsaved buffer of {len(data):,} bytes, over the "
                        f"{self.max_bytes:,}-byte limit: not read for the map"
                    )
                    removed.append(path)
                    continue
                sources[path] = (language, hashlib.sha256(data).hexdigest(), data)
                continue
            assert entry is not None
            seen = known.get(path)
            if seen is not None and seen[:2] == (entry.size_bytes, entry.mtime_ns):
                sources[path] = (language, seen[2], None)
                continue
            try:
                data = workspace_fs.read_bytes(self.root, path)
            except (OSError, workspace_fs.PathConflict) as exc:
                self.errors[path] = _unreadable(exc)
                removed.append(path)
                continue
            sha = hashlib.sha256(data).hexdigest()
            sources[path] = (language, sha, data)
            new_hashes[path] = (entry.size_bytes, entry.mtime_ns, sha)
        keys = {p: f"v{QUERIES_VERSION}:{lang}:{sha}" for p, (lang, sha, _) in sources.items()}
        cached = self._cache.tags(sorted(set(keys.values())))
        tags: dict[str, FileTags | None] = {p: None for p in removed}
        to_parse: list[tuple[str, str, bytes]] = []
        for path, (language, _sha, source) in sources.items():
            raw = cached.get(keys[path])
            if raw is not None:
                tags[path] = FileTags.from_json(raw)
                continue
            if source is None:
                try:
                    source = workspace_fs.read_bytes(self.root, path)
                except (OSError, workspace_fs.PathConflict) as exc:
                    self.errors[path] = _unreadable(exc)
                    tags[path] = None
                    continue
            tags[path] = None  # its place kept: the graph takes the files in this order
            to_parse.append((path, language, source))
        parsed = self._parse(to_parse, workers)
        tags.update(parsed)
        fresh = {keys[p]: t.to_json() for p, t in parsed.items() if not died(t.error or "")}
        if fresh:
            self._cache.put_tags(fresh)
        if new_hashes:
            self._cache.put_hashes(root_key, new_hashes)
        return tags, bool(new_hashes) or any(s is not None for _, _, s in sources.values())

    def _parse(
        self, work: list[tuple[str, str, bytes]], workers: TagWorkers | None
    ) -> dict[str, FileTags]:
        """(path, language, source) -> the path's tags: by the workers when there are many."""
        self._check_stopping()
        paths = [path for path, _, _ in work]
        found = dict(
            zip(paths, parse_all(self._parser, work, workers, self._stopping), strict=True)
        )
        self.errors.update((path, tags.error) for path, tags in found.items() if tags.error)
        return found

    def forget(self) -> None:
        """Drop the graph, the maps and the errors (the workspace was released: see
        WorkspaceIndex.forget)."""
        with self._lock:
            self._graph, self._maps, self.errors = RepoGraph(), OrderedDict(), {}

    def warm(self) -> None:
        """Build the graph's matrices now, so the first map request does not pay for them."""
        with self._lock:
            self._graph.prepare()

    @property
    def version(self) -> int:
        return self._graph.version

    def defines(self, name: str) -> bool:
        with self._lock:
            return self._graph.defines(name)

    def repo_map(
        self, focus: Focus, budget_tokens: int, count: Callable[[str], int], counter_id: str
    ) -> FittedMap:
        """The map for `focus` within `budget_tokens` as `count` counts (cached)."""
        with self._lock:
            key = (self._graph.version, focus, budget_tokens, counter_id)
            found = self._maps.get(key)
            if found is not None:
                self._maps.move_to_end(key)
                return found
            limit = budget_tokens + EXTRA_CANDIDATES + 1
            ranked, scores = self._graph.rank_with_scores(focus, limit=limit)
            fitted = fit_map(ranked, budget_tokens, count, self._line_reader())
            fitted = fitted.in_rank_order(scores)
            self._maps[key] = fitted
            while len(self._maps) > MAP_CACHE_ENTRIES:
                self._maps.popitem(last=False)
            return fitted

    def _line_reader(self) -> Callable[[str, int], str]:
        """(path, line) -> that line's text now: the unsaved buffer, else the file on disk;
        each file read once per map."""
        files: dict[str, list[bytes]] = {}

        def text_of(path: str, line: int) -> str:
            lines = files.get(path)
            if lines is None:
                overlay = self._overlay(path)
                try:
                    data = (
                        overlay.encode("utf-8", "surrogatepass")
                        if overlay is not None
                        else workspace_fs.read_bytes(self.root, path)
                    )
                except (OSError, workspace_fs.PathConflict):
                    data = b""
                lines = files[path] = data.split(b"\n")
            return lines[line].decode("utf-8", "replace") if line < len(lines) else ""

        return text_of


def died(error: str) -> bool:
    """A file's worker process died on it: its empty tags are not kept in the cache."""
    return error.startswith(WORKER_DIED)


def _chunks(
    paths: list[str], entries: Mapping[str, FileEntry], overlays: Mapping[str, str]
) -> Iterable[list[str]]:
    """`paths` in runs of at most CHUNK_FILES files and (but for a single file) CHUNK_BYTES."""
    chunk: list[str] = []
    held = 0
    for path in paths:
        entry, overlay = entries.get(path), overlays.get(path)
        size = len(overlay) if overlay is not None else (entry.size_bytes if entry else 0)
        if chunk and (len(chunk) >= CHUNK_FILES or held + size > CHUNK_BYTES):
            yield chunk
            chunk, held = [], 0
        chunk.append(path)
        held += size
    if chunk:
        yield chunk


def _unreadable(exc: OSError | workspace_fs.PathConflict) -> str:
    """Why a file was not read (read through workspace_fs: never through a symlink that
    leaves the workspace)."""
    if isinstance(exc, workspace_fs.PathConflict):
        return f"unreadable: {exc.reason}"
    return f"unreadable: {exc.strerror}"
