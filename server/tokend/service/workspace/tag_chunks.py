"""Tagging a workspace's files a chunk at a time (service.workspace.tags): a chunk's cached tags
and the sources left to parse (`read_chunk`), then its parsed tags kept in the workspace cache
(`finish_chunk`). A chunk is at most CHUNK_FILES files and CHUNK_BYTES of source, so no more
than a few chunks' bytes and tags are ever held as objects. The parse runs `Beside` the thread
that reads the next chunk and hands the graph the one before.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.tags import WORKER_DIED, FileTags
from tokend.core.workspace.fileclass import FileEntry, language_of
from tokend.core.workspace.files import PathConflict
from tokend.service.ports import WorkspaceFiles
from tokend.service.workspace.tree_ports import FileCache, Parsed, words_key

T = TypeVar("T")
SORT_PIECE = 4096  # paths sorted in one call (in_order)
CHUNK_FILES = 500  # files read and parsed between two cache writes and progress reports ...
CHUNK_BYTES = 8 << 20  # ... or fewer, once they hold this much source (a chunk of the kernel's
# register headers held 20,000 definitions a file: a chunk's tags, as objects, are bounded here)
CHUNK_PATHS = 5000  # ... and at most this many paths, those of files not read for tags included


@dataclass(frozen=True, slots=True)
class Reading:
    """Where a workspace's tags are read from and kept: its folder, its cache, the largest
    source read, each path's reason for having no tags (written here), how its files are read,
    and the version of the tag queries (in the cache keys)."""

    root: Path
    cache: FileCache
    errors: dict[str, str]
    max_bytes: int
    files: WorkspaceFiles
    queries_version: int


@dataclass(slots=True)
class Chunk:
    """Files being tagged: the tags known so far (None: none, or yet to parse) in path order,
    what to parse, and what to write to the cache once parsed."""

    paths: list[str]
    tags: dict[str, FileTags | None] = field(default_factory=dict)
    work: list[tuple[str, str, bytes]] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)  # path -> its tags' cache key
    new_hashes: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    reread: bool = False
    packed: dict[str, PackedTags] = field(default_factory=dict)  # by the tag workers
    unsaid: dict[str, str] = field(default_factory=dict)  # path -> key: its words not in


class Beside:
    """Runs a parse on a thread of its own (`beside(fn, *args)` -> a Future; up to `threads`
    at once), or, when not `wanted` (no worker processes: the parse is this thread's), in the
    calling thread."""

    def __init__(self, wanted: bool, threads: int = 1) -> None:
        self._pool = ThreadPoolExecutor(threads, "tokend-tags") if wanted else None

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __call__(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        if self._pool is not None:
            return self._pool.submit(fn, *args)
        done: Future[T] = Future()
        done.set_result(fn(*args))
        return done


def read_chunk(
    on: Reading,
    paths: list[str],
    entries: Mapping[str, FileEntry],
    overlays: Mapping[str, str],
    whole: bool = True,
) -> Chunk:
    """What tagging some files takes: their cached tags (with the words of the kind `whole`
    says, words_key), and the sources to parse (read in path order through the folders they
    share, opened once: `WorkspaceFiles.reader`)."""
    with on.files.reader(on.root) as read:
        return _read_chunk(on, paths, entries, overlays, read, whole)


def _sources(
    on: Reading,
    chunk: Chunk,
    entries: Mapping[str, FileEntry],
    overlays: Mapping[str, str],
    read: Callable[[str], bytes],
) -> dict[str, tuple[str, str, bytes | None]]:
    """Each file of `chunk` to tag: path -> (language, its SHA-256, its bytes when read; None
    when the cache's hash for its size and mtime stands); the files not to tag are None in
    `chunk.tags`, the hashes of the files read in `chunk.new_hashes`."""
    root_key = str(on.root)
    known = on.cache.hashes(root_key, chunk.paths)
    sources: dict[str, tuple[str, str, bytes | None]] = {}  # path -> (language, sha, bytes)
    for path in chunk.paths:
        entry = entries.get(path)
        overlay = overlays.get(path)
        language = _tag_language(path, entry, overlay)
        if language is None:
            chunk.tags[path] = None
            continue
        if overlay is not None:
            unsaved = _unsaved(on, path, overlay, language)
            if unsaved is None:
                chunk.tags[path] = None
            else:
                sources[path] = unsaved
            continue
        assert entry is not None
        seen = known.get(path)
        if seen is not None and seen[:2] == (entry.size_bytes, entry.mtime_ns):
            sources[path] = (language, seen[2], None)
            continue
        data = read_source(on, path, read)
        if data is None:
            chunk.tags[path] = None
            continue
        sha = hashlib.sha256(data).hexdigest()
        sources[path] = (language, sha, data)
        chunk.new_hashes[path] = (entry.size_bytes, entry.mtime_ns, sha)
    return sources


def _read_chunk(
    on: Reading,
    paths: list[str],
    entries: Mapping[str, FileEntry],
    overlays: Mapping[str, str],
    read: Callable[[str], bytes],
    whole: bool,
) -> Chunk:
    chunk = Chunk(paths)
    sources = _sources(on, chunk, entries, overlays, read)
    version = on.queries_version
    chunk.keys = {p: f"v{version}:{lang}:{sha}" for p, (lang, sha, _) in sources.items()}
    cached = with_words(on, sorted(set(chunk.keys.values())), whole)
    chunk.reread = bool(chunk.new_hashes) or any(s is not None for _, _, s in sources.values())
    for path, (language, _sha, source) in sources.items():
        raw = cached.get(chunk.keys[path])
        if raw is not None:
            chunk.tags[path] = FileTags.from_json(raw)
            if "w" not in raw and "e" not in raw:  # kept without its words (a build stopped
                # between its tags and its words: service.workspace.word_pass)
                chunk.unsaid[path] = chunk.keys[path]
            continue
        if source is None:
            source = read_source(on, path, read)
            if source is None:
                chunk.tags[path] = None
                continue
        chunk.tags[path] = None  # its place kept: the graph takes the files in this order
        chunk.work.append((path, language, source))
    return chunk


def with_words(on: Reading, keys: list[str], whole: bool = True) -> dict[str, dict[str, Any]]:
    """The cached tags of `keys`, with the words kept apart for those kept without them
    (service.workspace.word_pass) when counted as `whole` says (words_key): as tags kept with
    their words are (those hold their whole tokens: a tree without them drops them)."""
    cached = on.cache.tags(keys)
    wanted = {words_key(k, whole): k for k, raw in cached.items() if "w" not in raw}
    for key, words in on.cache.words(list(wanted)).items():
        cached[wanted[key]] = {**cached[wanted[key]], "w": words}
    return cached


def read_source(on: Reading, path: str, read: Callable[[str], bytes]) -> bytes | None:
    """A file's bytes by `read` (`on.files.reader`: never through a symlink that leaves the
    workspace); None, with the reason in `on.errors`, when it cannot be read."""
    try:
        return read(path)
    except (OSError, PathConflict) as exc:
        on.errors[path] = _unreadable(exc)
        return None


def _unsaved(
    on: Reading, path: str, text: str, language: str
) -> tuple[str, str, bytes | None] | None:
    """An unsaved buffer's source, None when it is too big to read for the map."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > on.max_bytes:  # 8 MB of words: 7 s of tree-sitter
        on.errors[path] = (
            f"an unsaved buffer of {len(data):,} bytes, over the "
            f"{on.max_bytes:,}-byte limit: not read for the map"
        )
        return None
    return (language, hashlib.sha256(data).hexdigest(), data)


def finish_chunk(
    on: Reading, chunk: Chunk, parsed: Mapping[str, str | Parsed], words_later: bool = False
) -> tuple[dict[str, FileTags | None], bool]:
    """The chunk's tags with what was parsed (JSON text, kept in the cache as it is; from the
    tag workers, packed beside it: `chunk.packed`, and the tags without their names); and
    whether any file was read anew (its content changed). With `words_later` (parsed without
    their words), a parsed file without words is `unsaid`."""
    fresh = {}
    for path, got in parsed.items():
        if isinstance(got, str):
            text, tags = got, FileTags.from_json(json.loads(got))
        else:
            text, tags, chunk.packed[path] = got
        chunk.tags[path] = tags
        if tags.error:
            on.errors[path] = tags.error
        if not died(tags.error or ""):
            fresh[chunk.keys[path]] = text
            if words_later and not tags.words and not tags.error:
                chunk.unsaid[path] = chunk.keys[path]
    if fresh:
        on.cache.put_tag_texts(fresh)
    if chunk.new_hashes:
        on.cache.put_hashes(str(on.root), chunk.new_hashes)
    return chunk.tags, chunk.reread


def chunks(
    paths: Iterable[str], entries: Mapping[str, FileEntry], overlays: Mapping[str, str]
) -> Iterable[list[str]]:
    """`paths` in runs of at most CHUNK_FILES files read for tags, CHUNK_BYTES of them (but
    for a single file) and CHUNK_PATHS paths. A file not read for tags (no tag language,
    skipped: too big, binary) counts only as a path (issue 22: the kernel's 500-path chunks of
    Documentation/ and of device trees, and its register headers' 8 MB of files over 1 MiB,
    made 37 of its 177 chunks of tags fewer than 100 files, down to one: two chunks at once
    are then one file a worker, and a worker waits while the other parses)."""
    chunk: list[str] = []
    held = files = 0
    for path in paths:
        size = _tag_bytes(path, entries.get(path), overlays.get(path))
        if chunk and (
            files >= CHUNK_FILES or held + (size or 0) > CHUNK_BYTES or len(chunk) >= CHUNK_PATHS
        ):
            yield chunk
            chunk, held, files = [], 0, 0
        chunk.append(path)
        if size is not None:
            held, files = held + size, files + 1
    if chunk:
        yield chunk


def _tag_language(path: str, entry: FileEntry | None, overlay: str | None) -> str | None:
    """The language `path` is tagged in (an unsaved buffer's by its name), None when it is
    not read for tags (no tag language; not in the walk; skipped: too big, binary)."""
    if overlay is not None:
        return language_of(path)
    if entry is None or entry.skipped:
        return None
    return entry.language


def _tag_bytes(path: str, entry: FileEntry | None, overlay: str | None) -> int | None:
    """The bytes tagging `path` reads (an unsaved buffer's by its characters), None when it
    reads none (`_tag_language`, which `_sources` asks too)."""
    if _tag_language(path, entry, overlay) is None:
        return None
    return len(overlay) if overlay is not None else entry.size_bytes if entry else None


def in_order(paths: Iterable[str]) -> list[str]:
    """`paths` sorted, SORT_PIECE at a time and then merged: sorted() of a 100,000-file tree's
    paths is one call that holds the interpreter (75 ms, every other connection waiting: issue
    22's py-spy of the daemon); heapq.merge is Python, which hands the interpreter on."""
    given = list(paths)
    pieces = [sorted(given[i : i + SORT_PIECE]) for i in range(0, len(given), SORT_PIECE)]
    return pieces[0] if len(pieces) == 1 else list(heapq.merge(*pieces))


def died(error: str) -> bool:
    """A file's worker process died on it: its empty tags are not kept in the cache."""
    return error.startswith(WORKER_DIED)


def _unreadable(exc: OSError | PathConflict) -> str:
    """Why a file was not read (never through a symlink that leaves the workspace)."""
    if isinstance(exc, PathConflict):
        return f"unreadable: {exc.reason}"
    return f"unreadable: {exc.strerror}"
