"""A graph updated in place is the graph a new process builds: after real edits on a real tree
(a definition renamed, a file added, one deleted, a comment changed), the maps are byte for byte
those of an index built from scratch on the same files; and only the rows that depend on the
edit were derived again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap import edges as repomap_edges
from tokend.core.repomap import graph as repomap
from tokend.core.repomap.graph import Focus
from tokend.core.repomap.keys import word_ids
from tokend.core.repomap.tags import Definition, FileTags
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

SOURCE = Path(__file__).resolve().parents[2] / "server" / "tokend"
FOCUSES = [
    Focus(),
    Focus(frozenset({"core/budget/limits.py"})),
    Focus(identifiers=frozenset({"fit_map", "walk"})),
    Focus(frozenset({"service/service.py"}), frozenset({"SessionState"})),
]


def o200k(text: str) -> int:
    return len(load_encoding("o200k_base").encode_ordinary(text))


def maps(index: WorkspaceIndex) -> list[str]:
    return [
        index.tags.repo_map(f, budget, o200k, "o200k").text
        for f in FOCUSES
        for budget in (512, 2048)
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SOURCE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_edits_in_place_give_the_maps_of_a_fresh_build(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "a.sqlite3"), index_ports()
    )
    index.build()
    before = maps(index)
    files = len(index.tags._graph.paths)
    derived: list[int] = []
    real = repomap_edges.derive_rows
    monkeypatch.setattr(
        repomap_edges,
        "derive_rows",
        lambda table, rows, *links: derived.append(len(rows)) or real(table, rows, *links),
    )

    budget = tree / "core" / "budget" / "limits.py"
    budget.write_text(budget.read_text().replace("def repo_map_target_tokens", "def map_target"))
    helper = tree / "core" / "brand_new.py"
    helper.write_text(
        "from tokend.core.budget.limits import map_target\n\ndef use_it():\n    return map_target\n"
    )
    (tree / "core" / "session" / "gates.py").unlink()
    render = tree / "core" / "repomap" / "render.py"
    render.write_text("# a comment only\n" + render.read_text())
    for path in (budget, helper, tree / "core" / "session" / "gates.py", render):
        index.apply_changes([path])  # one watcher batch each, as saves come
        after = maps(index)

    assert after != before  # the edits show
    assert derived and max(derived) < files / 2  # rows re-derived: the edits' neighbours only
    fresh = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "b.sqlite3"), index_ports()
    )
    fresh.build()
    assert maps(fresh) == after
    renamed = index.tags.repo_map(Focus(identifiers=frozenset({"map_target"})), 512, o200k, "o")
    assert "def map_target" in renamed.text


def test_a_batch_too_large_to_track_rebuilds_to_the_same_maps(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "a.sqlite3"), index_ports()
    )
    index.build()
    maps(index)
    monkeypatch.setattr(repomap, "TRACK_MAX_FILES", 1)  # a checkout: everything again
    edited = sorted((tree / "core").glob("*.py"))[:5]
    for path in edited:
        path.write_text(path.read_text().replace("def ", "def renamed_", 1))
    index.apply_changes(edited)
    fresh = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "b.sqlite3"), index_ports()
    )
    fresh.build()
    assert maps(index) == maps(fresh)


def test_ranking_a_block_at_a_time_gives_the_same_maps(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "a.sqlite3"), index_ports()
    )
    index.build()
    whole = maps(index)
    monkeypatch.setattr(repomap_edges, "FLOW_BLOCK", 37)  # many blocks, cut anywhere
    index.tags._maps.clear()
    assert maps(index) == whole


NAMES_POOL = ["alpha", "beta", "_gamma", "delta", "eps", "zeta"]
WORDS_POOL = ["upload", "bandwidth", "ceiling", "alpha", "frame"]  # what files say
tags_strategy = st.one_of(
    st.none(),
    st.builds(
        lambda defs, refs, words: FileTags(
            tuple(Definition(n, line, "") for line, n in enumerate(defs)),
            {n: c for n, c in refs},
            words=word_ids(words),
        ),
        st.lists(st.sampled_from(NAMES_POOL), max_size=4),
        st.lists(st.tuples(st.sampled_from(NAMES_POOL), st.integers(1, 5)), max_size=5),
        st.dictionaries(st.sampled_from(WORDS_POOL), st.integers(1, 9), max_size=3),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.dictionaries(st.sampled_from(["a.py", "b.py", "c.py", "d.py"]), tags_strategy),
        min_size=1,
        max_size=6,
    ),
    focus_file=st.sampled_from(["", "a.py", "c.py"]),
    focus_name=st.sampled_from(["", "alpha", "_gamma"]),
    text=st.sampled_from(["", "bandwidth ceiling", "upload the alpha frame"]),
)
def test_any_sequence_of_changes_ranks_as_a_fresh_graph(
    steps: list[dict[str, FileTags | None]], focus_file: str, focus_name: str, text: str
):
    """Files appear, change (what they say, or only that), lose every definition and vanish,
    one batch after another, with ranks asked in between (so each batch is applied in place);
    the final graph ranks as one built at once from the final files (in another order)."""
    focus = Focus(
        frozenset([focus_file] if focus_file else []),
        frozenset([focus_name] if focus_name else []),
        text,
    )
    graph, final = repomap.RepoGraph(), {}
    for step in steps:
        graph.set_files(step)
        graph.rank(focus, limit=50)
        for path, tags in step.items():
            if tags is None:
                final.pop(path, None)
            else:
                final[path] = tags
    fresh = repomap.RepoGraph()
    fresh.set_files(dict(sorted(final.items(), reverse=True)))
    assert graph.rank(focus, limit=50) == fresh.rank(focus, limit=50)
    assert graph.rank_files(focus) == fresh.rank_files(focus)
    assert graph.paths == sorted(final)


@settings(max_examples=150, deadline=None)
@given(
    files=st.dictionaries(
        st.sampled_from(["a.py", "b.py", "pkg/c.py", "pkg/d.py", "e.py"]),
        tags_strategy.filter(lambda t: t is not None),
        min_size=1,
    ),
    focus_file=st.sampled_from(["", "a.py", "pkg/c.py"]),
    focus_name=st.sampled_from(["", "alpha", "_gamma"]),
    limit=st.integers(min_value=1, max_value=30),
)
@example(  # a focus identifier both files define: each file's hit comes first, in rank order
    files={
        p: FileTags((Definition("alpha", 0, ""), Definition("_gamma", 1, "")), {})
        for p in ("a.py", "b.py")
    },
    focus_file="",
    focus_name="_gamma",
    limit=1,
)
def test_the_limited_choice_is_the_head_of_the_full_rank(
    files: dict[str, FileTags], focus_file: str, focus_name: str, limit: int
):
    """Ties everywhere (few names, few files): the first `limit` definitions, chosen from the
    files whose first definitions fill `limit`, are exactly the head of ranking them all."""
    graph = repomap.RepoGraph()
    graph.set_files(files)
    focus = Focus(
        frozenset([focus_file] if focus_file else []),
        frozenset([focus_name] if focus_name else []),
    )
    assert graph.rank(focus, limit=limit) == graph.rank(focus)[:limit]
