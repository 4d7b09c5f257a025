"""The first build's words come after its tags, a chunk of files at a time (RepoGraph.set_words,
issue 22). Each chunk used to grow the word table's columns into a new buffer beside the old one
(a spare of 1/256: on the kernel the last chunks copied about 59 MiB each, and the daemon's
peak rose 22 MiB in that pass). The pass now says how many files' words are still to come
(service.workspace.word_pass), and the first chunk makes room for them (pages not written are
not resident), so the later chunks are spliced into the same buffer. What each row reads back is checked against the words given."""

from __future__ import annotations

import numpy as np

from tokend.core.repomap.graph import RepoGraph
from tokend.core.repomap.keys import word_ids
from tokend.core.repomap.tags import Definition, FileTags

FILES, CHUNK, SAID = 1_000, 100, 300


def _words(i: int) -> dict[int, int]:
    rng = np.random.default_rng(i)
    chosen = rng.choice(5_000, size=SAID, replace=False)
    return dict(word_ids({f"w{j:05d}": int(rng.integers(1, 90)) for j in chosen.tolist()}))


def test_words_given_chunk_after_chunk_go_into_one_buffer() -> None:
    paths = [f"src/m{i:04d}.c" for i in range(FILES)]
    graph = RepoGraph()
    graph.set_files({p: FileTags((Definition(f"f{i}", 0, ""),), {"hub": 1})
                     for i, p in enumerate(paths)})  # fmt: skip
    given = {p: _words(i) for i, p in enumerate(paths)}
    buffers = []
    for start in range(0, FILES, CHUNK):
        chunk = paths[start : start + CHUNK]
        assert graph.set_words({p: given[p] for p in chunk}, FILES - start - len(chunk))
        buffers.append((graph.words.ids, graph.words.counts))
    first_ids, first_counts = buffers[0]
    # main: a new buffer at every chunk (each 30,000 entries over the 1/256 spare)
    moved = [n for n, (ids, counts) in enumerate(buffers)
             if not (np.shares_memory(ids, first_ids) and np.shares_memory(counts, first_counts))]  # fmt: skip
    assert moved == []
    words = graph.words
    assert len(words.ids) == FILES * SAID
    for row, path in enumerate(graph.paths):
        span = slice(int(words.offsets[row]), int(words.offsets[row + 1]))
        want = sorted(given[path].items())
        assert list(zip(words.ids[span].tolist(), words.counts[span].tolist(), strict=True)) == [
            (w, min(c, 255)) for w, c in want
        ], path
