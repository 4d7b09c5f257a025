"""WorkspaceTags: the tags of a workspace's source files and the repo map built from them.

Tags are kept by content hash in the workspace cache, and each file's (size, mtime, hash) too,
so a new process reads no unchanged file and parses nothing it parsed before. A changed file
is read and parsed alone; the graph re-derives only what depends on it (core.repomap.graph). The
first build hands the graph one chunk of files at a time, so no more than a chunk's tags are
ever held as objects. The graph keeps no line text: a map's lines are read when it is made
(the unsaved buffer first, else the file on disk). Fitted maps are kept per (graph version,
focus, budget, counter): asking again is a lookup, and a new focus re-ranks without re-reading
the tree. An edit that leaves a file's tags as they were (a comment, a function body) keeps
every cached map but those showing that file.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from itertools import chain
from pathlib import Path

from tokend.core.errors import IndexFailed, Stopping
from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.render import EXTRA_CANDIDATES, FittedMap, fit_map, lines_of
from tokend.core.repomap.said import reads_words
from tokend.core.repomap.whole import keeps_whole
from tokend.core.workspace.fileclass import DEFAULT_MAX_FILE_BYTES, FileEntry
from tokend.service.workspace.entries import Entries
from tokend.service.workspace.file_lines import bytes_now, line_reader
from tokend.service.workspace.history_read import HistoryRead
from tokend.service.workspace.tag_chunks import (
    Beside,
    Chunk,
    Reading,
    chunks,
    finish_chunk,
    in_order,
    read_chunk,
)
from tokend.service.workspace.tree_ports import FileCache, IndexPorts, Parsed, TagPool, pool_for
from tokend.service.workspace.walk_stream import WalkStream, merged
from tokend.service.workspace.word_pass import Names, OwedWords, Said

MAP_CACHE_ENTRIES = 64
WARM_THREADS = 2  # the graph's rows derived at once when it is warmed


class WorkspaceTags:
    def __init__(
        self,
        root: Path,
        cache: FileCache,
        ports: IndexPorts,
        overlay: Callable[[str], str | None] = lambda path: None,
        stopping: threading.Event | None = None,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes  # a bigger unsaved buffer is, like such a file, not mapped
        self._stopping = stopping or threading.Event()  # set: a build in progress gives up
        self._tagging = ports.tagging(self._stopping)  # tree-sitter: here, or in workers
        self._files = ports.files
        self._foreground = ports.foreground  # the maps served: counting words lets them first
        self._product = ports.rank_product  # a large graph's compiled product (its rank)
        self._cache = cache
        self._overlay = overlay  # a path's unsaved text, if an editor has one
        self.pool_workers: int | None = None  # tag worker processes (None: one per core; 0: none)
        self._graph = RepoGraph(product=self._product)
        self._lock = threading.RLock()  # guards the graph and the map cache
        self.history = HistoryRead(ports, root, self._stopping, lambda: self._graph, self._lock)
        self._maps: OrderedDict[tuple[object, ...], FittedMap] = OrderedDict()
        self.errors: dict[str, str] = {}  # path -> why it has no tags
        self._reading = Reading(root, cache, self.errors, max_bytes, ports.files,
                                self._tagging.queries_version)  # fmt: skip
        self.ready = threading.Event()  # set once the first build's tags are in the graph
        # what files say, counted after the first map (`count_words`); its `ready` is set once
        # every file's words are in (`words_ready`)
        self._owed = OwedWords(self._lock, self._reading, overlay, self._graph_words,
                               self._keeps_whole, self._tagging.release_freed_memory)  # fmt: skip
        self.words_ready = self._owed.ready
        self._bare = False  # the graph may hold words without whole tokens (`_whole_again`)
        self.failed: str | None = None  # why the first build failed (its maps are refused)

    def count_words(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Count the words of the files tagged without them (by worker processes for many),
        giving them to the graph as they come; `words_ready` is set once all are in."""

        def check() -> None:
            self._check_stopping()
            self._foreground.yield_to()  # a map being served goes first (service.foreground)

        pools = partial(pool_for, self._tagging, self.pool_workers, words=True)
        self._owed.count(self._tagging, pools, progress, check)

    def reads_words(self, focus: Focus) -> bool:
        """Whether a map for `focus` reads what files say (it waits for `words_ready`)."""
        return reads_words(self._graph.signals, bool(focus.files), focus.text)

    def _graph_words(self, spoken: Mapping[str, Said], more: int, names: Names) -> None:
        with self._lock:
            self._graph.set_words(spoken, more, names)

    def _keeps_whole(self) -> bool:
        """Whether the graph's tree keeps its files' whole tokens now (core.repomap.whole)."""
        with self._lock:
            return keeps_whole(len(self._graph.paths))

    def _whole_again(self, entries: Mapping[str, FileEntry], overlays: Mapping[str, str]) -> None:
        """A tree that keeps whole tokens whose graph may hold words counted without them (it
        was larger, or the cache gave such words): every file's tags and words of that kind
        read again (tag_chunks.with_words; unchanged files are not parsed), the rest owed."""
        with self._lock:
            if not self._bare or not keeps_whole(len(self._graph.paths)):
                return
            self._bare, every = False, list(self._graph.paths)
        self._tag(every, len(every), entries, overlays, lambda: len(every), None, True)

    def refresh_walked(
        self,
        walk: WalkStream,
        overlays: Mapping[str, str],
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Tag every source file a first walk finds (the build; the graph holds none yet),
        without the words of their text, which `count_words` counts once the first map can be
        made (issue 22: they were a fifth of the kernel's tagging, and that map reads none);
        `progress(done, total)` after each chunk of files. Begun while the walk goes (issue 22:
        the tag workers waited 4-6 s for the kernel's walk, a core idle): each chunk goes to
        the workers once the walk has found it, in path order as ever."""
        self.history.start()
        files = walk.at_least(self._tagging.pool_min_files) + len(overlays)

        def total() -> int:  # (the files found so far, until the walk is done)
            return len(walk.found) + sum(path not in walk.entries for path in overlays)

        ordered, entries = merged(walk.paths(), overlays), Entries(walk.entries)
        # (cached words read as the files found say: on a warm start, the graph's first chunks)
        self._tag(ordered, files, entries, overlays, total, progress, True, total)
        self._whole_again(entries, overlays)

    def refresh_paths(
        self,
        paths: Iterable[str],
        entries: Mapping[str, FileEntry],
        overlays: Mapping[str, str],
        *,
        whole: bool = False,
        progress: Callable[[int, int], None] | None = None,
        words_later: bool = False,
    ) -> None:
        """Re-tag `paths` and hand the graph each chunk of files as it is read and parsed,
        so no more than a chunk's bytes and tags are held at once (the kernel: 800 MB of C).
        With `whole`, files the graph has and `paths` does not are removed. Files whose words
        are not in (parsed `words_later`, or cached without them) are owed (`count_words`):
        counted here unless `words_later`."""
        # (a large tree's words are counted apart, without whole tokens: word_pass)
        wanted, later = in_order(paths), words_later or not self._keeps_whole()
        self._tag(wanted, len(wanted), entries, overlays, lambda: len(wanted), progress, later)
        if whole:
            with self._lock:
                gone = set(self._graph.paths) - set(wanted)
                if gone:
                    self._graph.set_files(dict.fromkeys(gone))
                    self._owed.owe({}, gone)
        self._whole_again(entries, overlays)
        if not words_later and self._owed.started:  # (before: the first build counts them)
            self.count_words()

    def _tag(
        self,
        ordered: Iterable[str],
        files: int,
        entries: Mapping[str, FileEntry],
        overlays: Mapping[str, str],
        total: Callable[[], int],
        progress: Callable[[int, int], None] | None,
        words_later: bool,
        size: Callable[[], int] | None = None,
    ) -> None:
        """Tag the `files` paths `ordered` gives (in path order), a chunk at a time: the
        workers parse one chunk while this thread reads the next and hands the graph the one
        before; the next goes to the workers before the one ahead is done, so a worker free of
        its last files starts on it (issue 22; TagWorkers: two at once). Cached words are read
        of the kind (with whole tokens or without) the tree's size says (`size()`, else the
        graph's)."""
        done = 0
        pool = pool_for(self._tagging, self.pool_workers, files)
        with pool as workers, Beside(workers is not None, threads=2) as beside:
            ahead: tuple[Chunk, Future[dict[str, str | Parsed]]] | None = None
            for paths_now in chain(chunks(ordered, entries, overlays), [None]):
                self._check_stopping()
                chunk = None
                if paths_now is not None:
                    whole = keeps_whole(size()) if size else self._keeps_whole()
                    chunk = read_chunk(self._reading, paths_now, entries, overlays, whole)
                    self._bare |= not whole
                parsing = None
                if chunk is not None:
                    parsing = beside(self._parse, chunk.work, workers, not words_later)
                parsed = ahead[1].result() if ahead is not None else {}
                if ahead is not None:
                    done_chunk = ahead[0]
                    tags, reread = finish_chunk(self._reading, done_chunk, parsed, words_later)
                    with self._lock:
                        unsaid = done_chunk.unsaid
                        if self._graph.set_files(tags, done_chunk.packed, unsaid) or reread:
                            self._forget_maps_showing(set(tags))
                        self._owed.owe(unsaid, tags)
                        self._bare |= not keeps_whole(len(self._graph.paths))
                    done += len(tags)
                    if progress is not None:
                        progress(done, total())
                ahead = None if chunk is None or parsing is None else (chunk, parsing)

    def _check_stopping(self) -> None:
        if self._stopping.is_set():
            raise Stopping("tokend is stopping: the repo map's tags were not finished")

    def _forget_maps_showing(self, paths: set[str]) -> None:
        """Drop the cached maps that show one of `paths` (their lines may have moved even when
        the graph did not change); maps of an older graph version are never asked for again."""
        for key in [k for k, m in self._maps.items() if paths.intersection(m.files)]:
            del self._maps[key]

    def _parse(
        self, work: list[tuple[str, str, bytes]], workers: TagPool | None, words: bool = True
    ) -> dict[str, str | Parsed]:
        """(path, language, source) -> the path's tags as JSON text, and packed when the
        workers parsed them (a refresh of many files; decoded by finish_chunk, on the thread
        that hands them to the graph: the thread waiting for the workers only moves bytes, and
        takes the interpreter from the event loop no more than it must)."""
        self._check_stopping()
        paths = [path for path, _, _ in work]
        found: Sequence[str | Parsed]
        if workers is not None and work:
            found = workers.parse_packed(work, words)
        else:
            found = self._tagging.parse_json(work, words)
        return dict(zip(paths, found, strict=True))

    def close(self) -> None:
        """End the worker kept for big files (the workspace closed)."""
        self._tagging.close()

    def forget(self) -> None:
        """Drop the graph, maps and errors (the workspace was released: WorkspaceIndex.forget)."""
        with self._lock:
            self._graph, self._maps = RepoGraph(product=self._product), OrderedDict()
            self.errors.clear()
            self._owed.forget()
            self._bare = False

    def warm(self) -> None:
        """Build the graph's matrices now, so the first map request does not pay for them;
        its rows two chunks at a time (issue 22: the first map waited for them, a core idle)."""
        self.history.fresh(wait=True)  # (the first: read beside the build's tags, refresh_walked)
        with self._lock, ThreadPoolExecutor(WARM_THREADS, "tokend-rows") as pool:
            self._graph.prepare(pool.map)

    def defines(self, name: str) -> bool:
        with self._lock:
            return self._graph.defines(name)

    def repo_map(
        self, focus: Focus, budget_tokens: int, count: Callable[[str], int], counter_id: str
    ) -> FittedMap:
        """The map for `focus` within `budget_tokens` as `count` counts (cached); one that
        reads what files say waits until their words are in (`words_ready`)."""
        self.history.fresh(wait=False)  # (a history that moved: read again, for a later map)
        reads = self.reads_words(focus)
        if reads:
            self.words_ready.wait()
            self._check_stopping()  # (a stop wakes the waiters: never a map of some words)
        if self.failed is not None:  # (set before the build wakes the waiters)
            raise IndexFailed.of(self.root.name, self.failed)
        with self._foreground.serving(), self._lock:  # background counting waits meanwhile
            said = self._graph.words_version if reads else -1
            key = (self._graph.version, said, focus, budget_tokens, counter_id)
            found = self._maps.get(key)
            if found is not None:
                self._maps.move_to_end(key)
                return found
            limit = budget_tokens + EXTRA_CANDIDATES + 1
            ranked, scores = self._graph.rank_with_scores(focus, limit=limit)
            fitted = fit_map(ranked, budget_tokens, count, self._line_reader(lines_of(ranked)))
            fitted = fitted.in_rank_order(scores)
            self._maps[key] = fitted
            while len(self._maps) > MAP_CACHE_ENTRIES:
                self._maps.popitem(last=False)
            return fitted

    def _line_reader(
        self, wanted: Mapping[str, set[int]] | None = None
    ) -> Callable[[str, int], str]:
        """(path, line) -> that line's text now: the unsaved buffer's, else the file's on disk
        (service.workspace.file_lines.line_reader, bytes_now)."""
        return line_reader(partial(bytes_now, self._files, self.root, self._overlay), wanted)
