"""The file rank's `said` signal (core.repomap.said): BM25 of what each file says alone, against
a file focus's RARE rarest words that another file says too, or a text's words; worked out
here by hand from each file's words (a dictionary per file, no table) and held against the
graph's, for any files and focus."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokend.core.repomap.graph import RepoGraph
from tokend.core.repomap.keys import word_id
from tokend.core.repomap.rank import Signals
from tokend.core.repomap.said import RARE, query_ids, said_scores
from tokend.core.repomap.tags import FileTags

POOL = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(150)]  # more than RARE


def _by_hand(
    files: list[dict[int, int]], asked: set[int], focus: bool, text: frozenset[int] = frozenset()
) -> list[float]:
    asked = asked | text
    df = {w: sum(1 for f in files if w in f) for w in asked}
    if focus:
        shared = sorted((df[w], w) for w in asked if df[w] >= 2 and w not in text)
        asked = {w for _, w in shared[:RARE]} | text
    return bm25_by_hand(files, asked)


def bm25_by_hand(files: Sequence[Mapping[Any, int]], asked: set[Any]) -> list[float]:
    """Each file's BM25 (K1 1.2, B 0.75, a count capped at 255) against the words `asked`,
    from the files' word counts alone (tests/unit/test_repomap_compounds.py's too)."""
    n = len(files)
    df = {w: sum(1 for f in files if w in f) for w in asked}
    lengths = [sum(min(c, 255) for c in f.values()) for f in files]
    mean = max(sum(lengths) / n, 1.0)
    out = []
    for f, length in zip(files, lengths, strict=True):
        norm = 1.2 * (1 - 0.75 + 0.75 * length / mean)
        score = 0.0
        for w in sorted(asked & set(f)):
            tf = min(f[w], 255)
            idf = math.log1p((n - df[w] + 0.5) / (df[w] + 0.5))
            score += idf * tf * 2.2 / (tf + norm)
        out.append(score)
    return out


@settings(max_examples=60, deadline=None)
@given(
    said=st.lists(
        st.dictionaries(st.sampled_from(POOL), st.integers(1, 300), max_size=90),
        min_size=2,
        max_size=12,
    ),
    focus=st.integers(0, 11),
    text=st.lists(st.sampled_from(POOL), max_size=5),
)
@example(  # the focus says 100 words, each said by one to three other files: 64 are read
    said=[
        {w: 1 for w in POOL[:100]},
        {w: 2 for w in POOL[:40]},
        {w: 3 for w in POOL[30:100]},
        {w: 1 for w in POOL[90:]},
    ],  # fmt: skip
    focus=0,
    text=[],
)
def test_said_is_bm25_of_the_rarest_shared_words(
    said: list[dict[str, int]], focus: int, text: list[str]
):
    files = [{word_id(w): c for w, c in f.items()} for f in said]
    graph = RepoGraph()
    graph.set_files({f"m{i:02d}.py": FileTags(words=f) for i, f in enumerate(files)})
    rows = [focus % len(files)]
    ids = query_ids(graph.words, Signals(), rows, "")
    got = said_scores(graph.words, len(files), rows, ids)
    assert np.allclose(got, _by_hand(files, set(files[rows[0]]), focus=True))
    asked, said_ids = " ".join(text), frozenset(word_id(w) for w in text)
    ids = query_ids(graph.words, Signals(), [], asked)
    got = said_scores(graph.words, len(files), [], ids)
    assert np.allclose(got, _by_hand(files, set(said_ids), focus=False))
    ids = query_ids(graph.words, Signals(), rows, asked)  # files and a text: its words all kept
    got = said_scores(graph.words, len(files), rows, ids, asked)
    assert np.allclose(got, _by_hand(files, set(files[rows[0]]), focus=True, text=said_ids))
