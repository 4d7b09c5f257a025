"""The tag parsing a workspace's tags work through (the port service.workspace.tree_ports
.TagParsing, one per workspace index): tree-sitter's parser in the calling thread for a few
files, a worker process kept for the big ones (adapters.solo_worker), and a pool of worker
processes for a refresh of many (adapters.tag_workers)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence

from tokend.adapters import heap, word_workers
from tokend.adapters.solo_worker import SoloWorker
from tokend.adapters.tag_wire import raw_json
from tokend.adapters.tag_workers import POOL_MIN_FILES, TagWorkers, Work, default_workers
from tokend.adapters.tags import TagParser
from tokend.adapters.tags.queries import QUERIES_VERSION
from tokend.core.repomap.text import count_words

SOLO_BYTES = 256 << 10  # a bigger source is parsed by a worker even in a small refresh
WORD_WORKERS = 1  # the words' pass's workers at most (issue 22: on the kernel two held 21-23 MiB
# each beside a daemon of 450-457 whose word table grows in that pass)


class TagParsing:
    """`stopping` set: a parse under way in a worker gives up (Stopping)."""

    queries_version = QUERIES_VERSION  # in the tags' cache keys: bumped, cached tags are old
    pool_min_files = POOL_MIN_FILES  # files to parse: fewer are parsed without a pool

    def __init__(self, stopping: threading.Event) -> None:
        self._stopping = stopping
        self.parser = TagParser()
        self.solo = SoloWorker(stopping)  # parses the big files of small refreshes

    @contextlib.contextmanager
    def pool(self, workers: int | None) -> Iterator[TagWorkers]:
        """Worker processes (`workers`, None: one per core) for one refresh, ended with it; then
        the memory the refresh freed is given back to the system. A build reads every source,
        takes every file's tags in pieces and frees them, and glibc keeps the freed blocks in its
        heap: after the kernel's, 278 of the heap's 416 MiB were free, and malloc_trim took the
        process from 567 to 397 MiB (in process, issue 22)."""
        try:
            with TagWorkers(workers, stopping=self._stopping) as pool:
                yield pool
        finally:
            heap.release_freed_memory()

    @contextlib.contextmanager
    def word_pool(self, workers: int | None) -> Iterator[TagWorkers]:
        """`pool`'s, for counting words alone: workers that load no tree-sitter, no grammar
        and no numpy (adapters.word_workers; issue 22: a tag worker counting the kernel's words
        held 36-38 MiB beside the daemon, one of these about half), WORD_WORKERS at most."""
        size = min(workers or default_workers(), WORD_WORKERS)
        try:
            with TagWorkers(size, stopping=self._stopping, program=word_workers.PROGRAM) as pool:
                yield pool
        finally:
            heap.release_freed_memory()

    def parse_json(self, work: Sequence[Work], words: bool = True) -> list[str]:
        """Each (path, language, source)'s tags as JSON text, parsed without a pool (without
        `words`, its words are not counted: but a big source's, which a worker parses)."""
        return parse_all_json(self.parser, work, None, self.solo, words)

    def count_words(
        self, work: Sequence[Work], whole: bool = True
    ) -> list[Mapping[int, int] | None]:
        """Each source's words (core.repomap.text.count_words; with their whole tokens but
        without `whole`), counted in this thread."""
        return [count_words(source, whole) for _path, _language, source in work]

    def release_freed_memory(self) -> None:
        """glibc's free pages given back to the system (adapters.heap)."""
        heap.release_freed_memory()

    def close(self) -> None:
        """End the worker kept for big files (the workspace closed)."""
        self.solo.close()


def parse_all_json(
    parser: TagParser,
    work: Sequence[Work],
    workers: TagWorkers | None,
    solo: SoloWorker | None = None,
    words: bool = True,
) -> list[str]:
    """Each (path, language, source)'s tags as JSON text: by `workers` when given (a refresh
    of POOL_MIN_FILES files or more; any chunk of it, however few files), else in this thread but
    for sources over SOLO_BYTES, which a worker parses (`solo`'s, kept between refreshes; else
    one started for them): tree-sitter's progress callback, where the interpreter changes
    hands, comes rarely while it recovers from errors (a 1 MB .py buffer of words held the
    event loop 44-65 ms)."""
    if workers is not None and work:
        return [text for text, _, _ in workers.parse_packed(work, words)]
    big = [item for item in work if len(item[2]) > SOLO_BYTES]
    found: Iterator[str] = iter(())
    if big and solo is not None:
        found = iter(solo.parse_json(big))
    elif big:
        with TagWorkers(1) as alone:
            found = iter(alone.parse_json(big))
    return [
        next(found) if len(s) > SOLO_BYTES else raw_json(parser.raw(lang, s, words))
        for _path, lang, s in work
    ]
