"""A tree of more than LARGE_TREE files keeps no whole tokens (core.repomap.whole), so its words are
counted without them: the word workers send none and the workspace cache keeps none (the
kernel's words' pass sent and cached about twice the words' bytes for tokens the daemon then
dropped). A tree that falls back under LARGE_TREE counts its files' tokens again, and ranks a
text focus as a fresh build of it does; its cache's words counted without tokens are never read
as a count with them. LARGE_TREE is made small here (the daemon's side reads it; the workers are
told in their batches). Oracles: core.repomap.tags.text_words of the files on disk, and a fresh
build of the same tree on an empty cache."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.probe_tree import probe_tree
from tokend.adapters.tag_workers import POOL_MIN_FILES
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap import whole
from tokend.core.repomap.graph import Focus
from tokend.core.repomap.tags import text_words
from tokend.core.repomap.text import MARK
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

TEXT = Focus(frozenset(), frozenset(), "reg32 register overflows in the probe")
_o200k = load_encoding("o200k_base")


def _count(text: str) -> int:
    return len(_o200k.encode_ordinary(text))


def _index(tree: Path, cache: Path | None, workers: int = 0) -> WorkspaceIndex:
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
    index.tags.pool_workers = workers
    index.build()
    assert index.tags.words_ready.wait(60)
    return index


def _cached_words(cache: Path) -> list[list[list[int]]]:
    """Every count of a file's words the cache keeps (apart, or in its tags' "w")."""
    db = sqlite3.connect(cache)
    try:
        rows = db.execute("SELECT words FROM file_words").fetchall()
        tags = db.execute("SELECT tags FROM file_tags").fetchall()
    finally:
        db.close()
    found = [json.loads(text) for (text,) in rows]
    return found + [w for (text,) in tags if (w := json.loads(text).get("w"))]


def test_a_large_trees_word_workers_send_and_its_cache_keeps_no_whole_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree of POOL_MIN_FILES + 10 files (a word worker counts them) past a LARGE_TREE of 50:
    every count the cache keeps is the file's words alone, and so is a saved file's (counted in
    process: bc8dbde kept it in its tags, with its tokens). bc8dbde: MARK and the file's whole
    tokens after it in every row, fails."""
    monkeypatch.setattr(whole, "LARGE_TREE", 50)
    tree, cache = tmp_path / "tree", tmp_path / "cache.sqlite3"
    tree.mkdir()
    for i in range(POOL_MIN_FILES + 10):
        (tree / f"m{i:03}.py").write_text(f"# parse_config_{i} reads reg{i}\ndef run_{i}(x):\n")
    index = _index(tree, cache, workers=1)
    try:
        graph = index.tags._graph
        assert len(graph.paths) == POOL_MIN_FILES + 10 and graph.whole.ids.size == 0
        by_words = {json.dumps(sorted(text_words(p.read_text()).items())) for p in tree.iterdir()}
        kept = _cached_words(cache)
        assert len(kept) == POOL_MIN_FILES + 10
        for ids, counts in kept:
            assert MARK not in ids
            assert json.dumps(sorted(zip(ids, counts, strict=True))) in by_words
        saved = tree / "m007.py"
        saved.write_text("# parse_config_7 reads reg7 and reg77\ndef run_7(x):\n")
        index.apply_changes([saved])
        assert index.tags.words_ready.wait(60)
        row = graph.paths.index("m007.py")
        span = slice(graph.words.offsets[row], graph.words.offsets[row + 1])
        ids, counts = graph.words.ids[span].tolist(), graph.words.counts[span].tolist()
        got = sorted(zip(ids, counts, strict=True))
        assert got == sorted(text_words(saved.read_text()).items())
        kept = _cached_words(cache)
        assert len(kept) == POOL_MIN_FILES + 11 and all(MARK not in ids for ids, _ in kept)
    finally:
        index.close()


def _ranked(index: WorkspaceIndex) -> tuple[list[str], list[list[int]]]:
    """The text focus's files in rank order, and each file's row of whole tokens."""
    fitted = index.tags.repo_map(TEXT, 1024, _count, "o200k")
    table = index.tags._graph.whole
    rows = [
        sorted(table.ids[table.offsets[r] : table.offsets[r + 1]].tolist())
        for r in range(len(table.offsets) - 1)
    ]
    return [path for path, *_ in fitted.ranked], rows


def test_a_tree_back_under_large_tree_ranks_a_text_as_a_fresh_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six files past a LARGE_TREE of 4 (no tokens), then two deleted: the four left rank the
    text as a fresh build of them on an empty cache does (`b_probe.py` first), live and after a
    restart on the same cache (which holds their words counted without tokens). bc8dbde: the
    rows emptied while the tree was large stay empty and `a_probe.py` comes first, fails."""
    monkeypatch.setattr(whole, "LARGE_TREE", 4)
    tree, cache = probe_tree(tmp_path), tmp_path / "cache.sqlite3"
    index = _index(tree, cache)
    try:
        assert index.tags._graph.whole.ids.size == 0  # (six files: no tokens)
        for gone in ("other2.py", "other3.py"):
            (tree / gone).unlink()
        index.apply_changes([tree / "other2.py", tree / "other3.py"])
        assert index.tags.words_ready.wait(60)
        live = _ranked(index)
    finally:
        index.close()
    fresh_index = _index(tree, None)
    try:
        fresh = _ranked(fresh_index)
    finally:
        fresh_index.close()
    assert fresh[0][0] == "b_probe.py" and all(fresh[1])
    assert live == fresh
    again = _index(tree, cache)
    try:
        assert _ranked(again) == fresh
    finally:
        again.close()
