"""What the kernel's first map waited for after its tags, on one core, done beside them or once
(issue 22, branch first24): the first `repoMap/get` request loaded its counter's vocabulary
(o200k: about a second) only once the tags were in; and it looked up the group of every
definition and reference (TagTable.groups: 2.1 s on the kernel's 2.9 million definitions and
4.1 million references), which the build's warm-up had just sorted (the definers) and searched
(every reference, deriving the graph's rows); and it made every path's terms for BM25 of an
empty query (0.64 s)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tokend.adapters import tokenizers
from tokend.core.repomap import rank, store
from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.tags import Definition, FileTags
from tokend.lsp.handlers import repomap as handler
from tokend.lsp.wire.repomap import RepoMapParams
from tokend.service.app import App
from tokend.service.workspace.tags import WorkspaceTags


async def test_a_map_request_waiting_for_the_tags_loads_its_vocabulary_meanwhile(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Main: the vocabulary was loaded by the map's fit, after the tags."""
    monkeypatch.setattr(tokenizers, "_encodings", {})  # (as in a daemon that counted nothing)
    held = threading.Event()
    real = WorkspaceTags.refresh_walked

    def refresh(self: WorkspaceTags, *args: Any, **kwargs: Any) -> None:
        assert held.wait(60)  # the first build's tags, held until the vocabulary is looked at
        real(self, *args, **kwargs)

    monkeypatch.setattr(WorkspaceTags, "refresh_walked", refresh)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text("def start():\n    return 1\n")
    sid = app.service.sessions.create_session("gpt-4o", workspace_uri=tree.as_uri()).id
    ls = SimpleNamespace(service=app.service, app=app, last_repo_map=None)
    request = asyncio.create_task(handler.get(ls, RepoMapParams(sid, 1024)))  # type: ignore[arg-type]
    try:
        for _ in range(400):  # up to 20 s for the vocabulary, the tags held
            if "o200k_base" in tokenizers._encodings or request.done():
                break
            await asyncio.sleep(0.05)
        index = app.workspaces.get(tree.as_uri())
        assert index is not None and not index.tags.ready.is_set()
        loaded = "o200k_base" in tokenizers._encodings
    finally:
        held.set()
    reply = await asyncio.wait_for(request, 60)
    assert loaded
    assert "start" in str(reply)


def _files(seed: int, count: int) -> dict[str, FileTags]:
    """`count` files defining and referring to names drawn from one pool (some shared, some
    defined nowhere)."""
    rng = np.random.default_rng(seed)
    names = [f"name_{i}" for i in range(400)]
    out = {}
    for n in range(count):
        defined = sorted(set(rng.choice(names, 12).tolist()))
        refs = set(rng.choice(names, 25).tolist()) | {f"nowhere_{n}"}
        definitions = tuple(
            Definition(name, line, f"def {name}") for line, name in enumerate(defined)
        )
        out[f"d{n % 5}/f{n:03}.py"] = FileTags(definitions, dict.fromkeys(sorted(refs), 2))
    return out


def test_the_first_rank_after_the_warm_up_looks_up_no_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The definitions' groups come from the definers' sort, the references' from deriving
    every row: the rank after `prepare` (the build's warm-up) searches no key among the groups
    (main: every definition's and reference's, in its request). The same columns and map."""
    files = _files(22, 120)
    before = RepoGraph()  # built at once, its groups made before its rows
    before.set_files(files)
    before.table.groups()
    before.prepare()
    graph = RepoGraph()
    for start in range(0, 120, 40):  # in chunks, as a first build gives them
        graph.set_files(dict(list(files.items())[start : start + 40]))
    graph.prepare()
    assert graph.table.d_key is None  # let go: the groups hold the keys (as after main's request)
    looked_up: list[int] = []
    real = store.group_of

    def counted(groups: Any, keys: Any) -> Any:
        looked_up.append(len(keys))
        return real(groups, keys)

    monkeypatch.setattr(store, "group_of", counted)
    ranked = graph.rank(Focus())
    assert looked_up == []
    assert ranked == before.rank(Focus()) and len(ranked) > 100
    # the columns a plain lookup gives: each key's place among the defined names' sorted keys
    packed = [PackedTags.of(files[path]) for path in sorted(files)]
    keys = sorted({int(k) for p in packed for k in p.def_keys})
    place = {k: i for i, k in enumerate(keys)}
    assert graph.table.groups().tolist() == keys
    assert graph.table.d_group.tolist() == [place[int(k)] for p in packed for k in p.def_keys]
    want = [place.get(int(k), -1) for p in packed for k in p.ref_keys]
    assert graph.table.r_group.tolist() == want and want.count(-1) >= 120


def test_a_map_without_a_focus_makes_no_terms_of_its_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BM25 of an empty query is 0 for every file: the map without a focus (the first map) no
    longer makes every path's terms to find that out (0.64 s of the kernel's first request, in
    process). Main: made them."""
    graph = RepoGraph()
    graph.set_files(_files(7, 60))
    graph.prepare()
    made: list[int] = []
    real = rank.path_terms

    def counted(paths: list[str]) -> Any:
        made.append(len(paths))
        return real(paths)

    monkeypatch.setattr(rank, "path_terms", counted)
    ranked = graph.rank(Focus())
    assert made == [] and len(ranked) > 50
    # the whole reckoning (each file's length from its terms): 0 for every file
    terms = real(graph.paths)
    length = rank.lengths(graph.table, terms, graph.words.lengths())[1]
    assert not rank.lexical(graph.table, terms, np.zeros(0, dtype=np.uint64), length).any()
    assert graph.rank(Focus(files=frozenset({graph.paths[0]}))) and made == [60]  # a focus does
