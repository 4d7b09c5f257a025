"""The file rank's `stem` signal (core.repomap.stem): the Jaccard share of a file's name words
and the focus file's, worked out here from names made of known words (so the words are known
without splitting them), and a small tree where only the signal ranks a file's test first."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.rank import Signals
from tokend.core.repomap.stem import name_terms, stem
from tokend.core.repomap.tags import Definition, FileTags

WORDS = ["server", "client", "router", "frame", "upload", "test", "spec"]
NOT_NAME = {"test", "spec"}  # a test's words say nothing of what it tests

name_strategy = st.tuples(
    st.sampled_from(["", "pkg/", "pkg/sub/", "tests/"]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.sampled_from(["_", "-", "."]),
    st.sampled_from([".py", ".go", ".ts", ".test.ts"]),
)


def _path(parts: tuple[str, list[str], str, str]) -> str:
    folder, words, joint, ext = parts
    return folder + joint.join(words) + ext


def _words(parts: tuple[str, list[str], str, str]) -> set[str]:
    _, words, _, ext = parts
    said = set(words) | ({"test"} if ext == ".test.ts" else set())
    return said - NOT_NAME


@settings(max_examples=150, deadline=None)
@given(names=st.lists(name_strategy, min_size=2, max_size=12), focus=st.integers(0, 11))
def test_stem_is_the_jaccard_share_of_the_name_words(
    names: list[tuple[str, list[str], str, str]], focus: int
):
    paths = [_path(p) for p in names]
    if len(set(paths)) != len(paths):
        return
    at = focus % len(names)
    offsets, keys = name_terms(paths)
    got = stem(offsets, keys, [at])
    mine = _words(names[at])
    for i, parts in enumerate(names):
        theirs = _words(parts)
        union = mine | theirs
        expected = 0.0 if i == at or not mine or not theirs else len(mine & theirs) / len(union)
        assert abs(got[i] - expected) < 1e-12, (paths[at], paths[i])


def test_no_focus_file_no_stem():
    offsets, keys = name_terms(["a/server.py", "b/server.py"])
    assert not stem(offsets, keys, []).any()


def _tree() -> dict[str, FileTags]:
    """pkg/router.py's test refers to it once (and to pkg/layout.py); tests/test_route_table.py
    uses more of it, and its path says `route` as add_route does."""

    def tags(defs: list[str], refs: dict[str, int]) -> FileTags:
        return FileTags(tuple(Definition(n, i, "") for i, n in enumerate(defs)), refs)

    return {
        "pkg/router.py": tags(["Router", "add_route"], {}),
        "pkg/layout.py": tags(["Layout"], {}),
        "tests/test_router.py": tags(["test_add"], {"Router": 1, "Layout": 1}),
        "tests/test_route_table.py": tags(["test_table"], {"Router": 3, "add_route": 2}),
    }


def test_a_file_focus_ranks_its_test_first_only_by_its_name():
    graph = RepoGraph()
    graph.set_files(_tree())
    focus = Focus(frozenset({"pkg/router.py"}))
    ranked = graph.rank_files(focus)
    assert ranked[0][0] == "tests/test_router.py", ranked
    graph.use(Signals(stem=False))
    ranked = graph.rank_files(focus)
    assert ranked[0][0] == "tests/test_route_table.py", ranked  # main's: the other test first


def test_a_focus_without_files_has_no_stem():
    graph = RepoGraph()
    graph.set_files(_tree())
    on = graph.rank_files(Focus(frozenset(), frozenset({"Router"})))
    graph.use(Signals(stem=False))
    assert graph.rank_files(Focus(frozenset(), frozenset({"Router"}))) == on
    assert np.isfinite([s for _, s in on]).all()
