"""The words' pass after the first map (service.workspace.word_pass) lets a chunk's sources go
once they are counted, not once the chunk's words are landed: the chunk being landed and the
next one read held their sources side by side (issue 22: up to two chunks of CHUNK_BYTES, 8 MB
each, in the pass whose peak was the daemon's). Counted by tracemalloc at each landing (the
graph given a chunk's words): bytes, not time. The words landed are those counted, per file."""

from __future__ import annotations

import contextlib
import hashlib
import threading
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tokend.service.workspace import word_pass
from tokend.service.workspace.tag_chunks import Reading
from tokend.service.workspace.word_pass import OwedWords

FILES, SIZE = 12, 1 << 20  # files of 1 MiB, 4 to a chunk


def _source(path: str) -> bytes:
    return path.encode().ljust(SIZE, b" ")


class _Reads:
    """A fake's `WorkspaceFiles.reader`: each read by its read_bytes."""

    def read_bytes(self, root: Path, path: str) -> bytes:
        raise NotImplementedError

    def reader(self, root: Path) -> contextlib.nullcontext[Callable[[str], bytes]]:
        return contextlib.nullcontext(lambda rel: self.read_bytes(root, rel))


class _Files(_Reads):
    def read_bytes(self, root: Path, path: str) -> bytes:
        return _source(path)  # (a new object at each read: tracemalloc sees it)


class _Cache:
    def __init__(self) -> None:
        self.kept: dict[str, str] = {}

    def put_word_texts(self, texts: Mapping[str, str]) -> None:
        self.kept.update(texts)

    def tags(self, keys: Sequence[str]) -> dict[str, dict[str, object]]:
        return {}  # (no names: the words' pass gives none)


class _Counting:
    """Counts a file's words as its first byte's value and its length (what the test reads
    back); in this thread (no workers)."""

    def count_words(
        self, work: list[tuple[str, str, bytes]], whole: bool = True
    ) -> list[dict[int, int]]:
        return [{source[0]: len(source)} for _, _, source in work]


def test_a_chunks_sources_are_gone_when_its_words_land(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(word_pass, "CHUNK_FILES", 4)
    monkeypatch.setattr(word_pass, "SOURCE_BYTES", 4 * SIZE)  # (4 files a chunk: 3 landings)
    paths = [f"src/f{i:02d}.c" for i in range(FILES)]
    keys = {p: f"1:c:{hashlib.sha256(_source(p)).hexdigest()}" for p in paths}
    cache = _Cache()
    reading = Reading(Path("/"), cache, {}, SIZE, _Files(), 1)  # type: ignore[arg-type]
    held: list[int] = []
    landed: dict[str, Mapping[int, int]] = {}

    def set_words(spoken: Mapping[str, Mapping[int, int]], more: int, _names: object) -> None:
        held.append(tracemalloc.get_traced_memory()[0] - before)
        landed.update(spoken)

    owed = OwedWords(threading.RLock(), reading, lambda path: None, set_words)
    with owed._lock:
        owed.owe(keys, ())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        owed.count(_Counting(), lambda n: contextlib.nullcontext(None))  # type: ignore[arg-type]
    finally:
        tracemalloc.stop()
    assert owed.ready.is_set()
    assert landed == {p: {_source(p)[0]: SIZE} for p in paths}
    assert len(held) == FILES // 4
    # main: the landed chunk's sources and the next one's (8 MiB) at every landing but the last
    assert max(held) < 4 * SIZE, held


class _Saying:
    """Counts 300 words a file (ids past the small ints Python keeps once), in this thread."""

    def count_words(
        self, work: list[tuple[str, str, bytes]], whole: bool = True
    ) -> list[dict[int, int]]:
        return [{10_000 + 7 * j + source[0]: 300 + j for j in range(300)} for _, _, source in work]


def test_a_landing_holds_the_words_of_a_chunk_of_250_files() -> None:
    """Each file's words come back as a dictionary of Python ints (about 30 KB for 300 words);
    a landing holds the landed chunk's and the next one's: with chunks of 500 files (the tags'
    CHUNK_FILES), 1,000 dictionaries at the words' pass's landings (issue 22: on the kernel
    the pass peaked at 479-484 MiB, above the 477 asked)."""
    files = 1_000
    paths = [f"src/f{i:04d}.c" for i in range(files)]
    source = {p: p.encode() for p in paths}
    keys = {p: f"1:c:{hashlib.sha256(source[p]).hexdigest()}" for p in paths}
    reading = Reading(Path("/"), _Cache(), {}, SIZE, _SmallFiles(source), 1)  # type: ignore[arg-type]
    held: list[int] = []

    def set_words(spoken: Mapping[str, Mapping[int, int]], more: int, _names: object) -> None:
        held.append(tracemalloc.get_traced_memory()[0] - before)

    owed = OwedWords(threading.RLock(), reading, lambda path: None, set_words)
    with owed._lock:
        owed.owe(keys, ())
    tracemalloc.start()
    try:
        one = tracemalloc.get_traced_memory()[0]
        sample = _Saying().count_words([("x", "c", b"x")] * 250)
        chunk = tracemalloc.get_traced_memory()[0] - one  # 250 files' words
        del sample
        before = tracemalloc.get_traced_memory()[0]
        owed.count(_Saying(), lambda n: contextlib.nullcontext(None))  # type: ignore[arg-type]
    finally:
        tracemalloc.stop()
    assert max(held) < 2.6 * chunk, (held, chunk)  # main: 30.2 MB (4.2 chunks); now 16.6
    assert len(held) == files // 250


class _SmallFiles(_Reads):
    def __init__(self, source: Mapping[str, bytes]) -> None:
        self.source = source

    def read_bytes(self, root: Path, path: str) -> bytes:
        return self.source[path]


def test_the_pass_holds_about_a_mib_of_sources_at_once() -> None:
    """Files of 256 KiB, 250 to a chunk but for the sources' bound: the pass's peak (tracemalloc)
    is about a chunk's sources, SOURCE_BYTES and one file more, where the tags' chunks hold 8 MB
    (issue 22: on the kernel the daemon's own RSS in the words' pass, 450-457 MiB at its peak,
    rose and fell by about 10 MiB between landings). The words landed are those counted.
    Main 3342e99: 8.3 MiB (a chunk of 8 MB); now 1.3."""
    size, files = 256 << 10, 80
    owed, paths, landed = _owing_sized(size, files)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        owed.count(_Counting(), lambda n: contextlib.nullcontext(None))  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert landed == {p: {p.encode()[0]: size} for p in paths}
    assert peak < 2.5 * (1 << 20), peak / (1 << 20)


class _Sized(_Reads):
    """Each file its path's bytes padded to `size`, a new object at each read."""

    def __init__(self, size: int) -> None:
        self.size = size

    def read_bytes(self, root: Path, path: str) -> bytes:
        return path.encode().ljust(self.size, b" ")


def _owing_sized(
    size: int, files: int
) -> tuple[OwedWords, list[str], dict[str, Mapping[int, int]]]:
    """An OwedWords owing `files` files of `size` bytes (_Sized), the paths, and what lands."""
    paths = [f"src/f{i:02d}.c" for i in range(files)]
    keys = {
        p: f"1:c:{hashlib.sha256(_Sized(size).read_bytes(Path(), p)).hexdigest()}" for p in paths
    }
    reading = Reading(Path("/"), _Cache(), {}, size, _Sized(size), 1)  # type: ignore[arg-type]
    landed: dict[str, Mapping[int, int]] = {}
    owed = OwedWords(threading.RLock(), reading, lambda path: None, lambda s, *_: landed.update(s))
    with owed._lock:
        owed.owe(keys, ())
    return owed, paths, landed


class _Handing:
    """A pool whose first chunk's count waits (at most WAIT_S) until the next chunk's count was
    given to it, as a worker's batches of the next chunk wait for it; it records whether it
    was. Counts as _Counting."""

    WAIT_S = 5.0

    def __init__(self) -> None:
        self.calls = 0
        self.next_given = threading.Event()
        self.seen: list[bool] = []

    def count_words(
        self, work: list[tuple[str, str, bytes]], whole: bool = True
    ) -> list[dict[int, int]]:
        self.calls += 1
        if self.calls == 1:
            self.seen.append(self.next_given.wait(self.WAIT_S))
        else:
            self.next_given.set()
        return _Counting().count_words(work)


def test_the_next_chunk_is_given_to_the_pool_before_a_chunk_is_waited_for() -> None:
    """A chunk's count is handed to the pool while the one before is still counted, so the
    pool's worker goes on to it at once (issue 22: with one word worker the kernel's words'
    pass waited at every chunk, about 1,100 of them, for the landing thread). The words
    landed are those counted. fc8a583, which orders them as main 3342e99 does: the next chunk
    given only once the first one's count returned (its wait ran out)."""
    size, files = 512 << 10, 6
    owed, paths, landed = _owing_sized(size, files)
    handing = _Handing()
    owed.count(_Counting(), lambda n: contextlib.nullcontext(handing))  # type: ignore[arg-type]
    assert landed == {p: {p.encode()[0]: size} for p in paths}
    assert handing.calls >= 2 and handing.seen == [True]
