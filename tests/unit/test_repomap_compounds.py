"""A text focus's `compounds` signal (core.repomap.said): BM25 of what each file says against the
text's identifiers of two words or more, whole (`parse_config`, `loadSettings` -> loadsettings).
Held against BM25 worked out here by hand from each file's words (a dictionary per file, the
compounds of each text known by how it was made), and on a small tree where a long file saying
a task's words often leads unless the compound the task names counts."""

from __future__ import annotations

import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_repomap_said import bm25_by_hand
from tokend.core.repomap.fusion import TEXT_FUSION
from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.rank import Signals
from tokend.core.repomap.said import said_signals
from tokend.core.repomap.tags import FileTags

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
SNAKE = [f"{a}_{b}" for a in WORDS[:3] for b in WORDS[3:]]  # said (and counted) lowered whole
CAMEL = [f"{a}{b.title()}" for a in WORDS[3:] for b in WORDS[:3]]  # deltaAlpha -> deltaalpha
POOL = WORDS + SNAKE + [c.lower() for c in CAMEL]


def _id(word: str) -> int:
    return zlib.crc32(word.encode("ascii"))


@settings(max_examples=60, deadline=None)
@given(
    said=st.lists(
        st.dictionaries(st.sampled_from(POOL), st.integers(1, 300), max_size=12),
        min_size=2,
        max_size=10,
    ),
    words=st.lists(st.sampled_from(WORDS), max_size=4),
    snake=st.lists(st.sampled_from(SNAKE), max_size=3),
    camel=st.lists(st.sampled_from(CAMEL), max_size=3),
)
def test_compounds_is_bm25_of_the_texts_compounds_alone(
    said: list[dict[str, int]], words: list[str], snake: list[str], camel: list[str]
):
    graph = RepoGraph()
    graph.set_files(
        {
            f"m{i:02d}.py": FileTags(words={_id(w): c for w, c in f.items()})
            for i, f in enumerate(said)
        }
    )
    text = " ".join(["Fix", *words, "in", *snake, "and", *camel, "."])
    got = said_signals(graph.words, len(said), Signals(), TEXT_FUSION, [], text)["compounds"]
    compounds = set(snake) | {c.lower() for c in camel}  # single words ask nothing
    assert np.allclose(got, bm25_by_hand(said, compounds))
    asked = {w.lower() for w in [*words, *snake, *camel]}  # `said` of the same pass: the text's
    asked |= {p for w in snake for p in w.split("_")}  # words, their parts and compounds
    asked |= {p for c in camel for p in (c[:5], c[5:].lower())}  # (each of POOL's is 5 long)
    alone = said_signals(graph.words, len(said), Signals(), TEXT_FUSION, [], text)["said"]
    assert np.allclose(alone, bm25_by_hand(said, asked | {"fix"}))


def _tree() -> dict[str, FileTags]:
    """core/base.py says `config`, `parse`, `file`, `empty` often (a long file of the
    task's words); io/loader.py says `parse_config` (the name the task gives) and its words once."""

    def words(counts: dict[str, int]) -> FileTags:
        return FileTags(words={_id(w): c for w, c in counts.items()})

    return {
        "core/base.py": words(
            {"config": 9, "parse": 6, "file": 3, "empty": 1, "value": 30, "default": 30}
        ),
        "io/loader.py": words({"parse_config": 3, "parse": 3, "config": 3, "stream": 6}),
        "io/writer.py": words({"stream": 9, "write": 7, "file": 3}),
        "cli/main.py": words({"args": 8, "run": 5, "value": 2}),
        "web/app.py": words({"route": 9, "request": 6, "default": 2}),
        "web/views.py": words({"render": 7, "request": 4, "template": 3}),
    }


def test_a_text_naming_a_compound_ranks_the_file_saying_it_first():
    graph = RepoGraph()
    graph.set_files(_tree())
    focus = Focus(frozenset(), frozenset(), "parse_config fails on an empty config file")
    assert graph.rank_files(focus)[0][0] == "io/loader.py"  # main's: core/base.py first
    graph.use(Signals(compounds=False))
    assert graph.rank_files(focus)[0][0] == "core/base.py"


def test_a_file_focus_reads_no_compounds():
    graph = RepoGraph()
    graph.set_files(_tree())
    focus = Focus(frozenset({"io/writer.py"}), frozenset(), "parse_config fails")
    on = graph.rank_files(focus)
    graph.use(Signals(compounds=False))
    assert graph.rank_files(focus) == on
