"""A text focus reads each file's whole tokens too (core.repomap.whole, issue 24's sixteenth
pass): identifiers of 3 characters or more, whole and lowered, as the BM25 baseline reads a file.
On a small real tree, two files say the same words (`reg_32` and `reg32` are both the word
`reg`), and only one says the text's `reg32` as written: the map ranks it first. The table of
whole tokens is kept as the tree changes: a file edited is counted again, a file deleted is
gone. Oracles: the files on disk, their tokens counted here by the baseline's rule (a regular
expression and a Counter), and which file says the text's token (written by the test)."""

from __future__ import annotations

import json
import re
import sqlite3
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tests.probe_tree import probe_tree
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import SAID, WorkspaceCache
from tokend.core.repomap import whole
from tokend.core.repomap.graph import Focus
from tokend.core.repomap.text import MARK, WHOLE_MAX, WHOLE_SEED
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

TEXT = Focus(frozenset(), frozenset(), "reg32 register overflows in the probe")
_o200k = load_encoding("o200k_base")


def _count(text: str) -> int:
    return len(_o200k.encode_ordinary(text))


def _index(tree: Path, cache: Path | None = None) -> WorkspaceIndex:
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
    index.tags.pool_workers = 0
    index.build()
    assert index.tags.words_ready.wait(30)
    return index


def _first(index: WorkspaceIndex) -> str:
    fitted = index.tags.repo_map(TEXT, 1024, _count, "o200k")
    return fitted.ranked[0][0]


def _baseline_tokens(tree: Path, path: str) -> dict[int, int]:
    """The file's text's and path's tokens, as bench.repomap_eval_baselines.BM25 counts them, by
    their ids (the WHOLE_MAX most frequent: every one, in these small files)."""
    said = (tree / path).read_text()
    tokens = Counter(w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", said))
    tokens.update(w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", path))
    assert len(tokens) <= WHOLE_MAX
    return {zlib.crc32(t.encode(), WHOLE_SEED): min(n, 255) for t, n in tokens.items()}


def _rows_hold_the_files_tokens(index: WorkspaceIndex, tree: Path) -> None:
    graph = index.tags._graph
    table = graph.whole
    assert len(table.offsets) == len(graph.paths) + 1
    for row, path in enumerate(graph.paths):
        span = slice(table.offsets[row], table.offsets[row + 1])
        got = dict(zip(table.ids[span].tolist(), table.counts[span].tolist(), strict=True))
        assert got == _baseline_tokens(tree, path), path


def test_a_text_focus_ranks_first_the_file_saying_its_token_as_written(tmp_path: Path) -> None:
    """Main bce5b30 ranks `a_probe.py` first (a tie on every signal it has, broken by path)."""
    tree = probe_tree(tmp_path)
    index = _index(tree)
    try:
        assert _first(index) == "b_probe.py"
        _rows_hold_the_files_tokens(index, tree)
    finally:
        index.close()


def test_the_tokens_follow_an_edit_and_a_delete(tmp_path: Path) -> None:
    tree = probe_tree(tmp_path)
    index = _index(tree)
    try:
        (tree / "a_probe.py").write_text("# the reg32 register, reg32 and reg32 again\n")
        index.apply_changes([tree / "a_probe.py"])
        assert index.tags.words_ready.wait(30)
        _rows_hold_the_files_tokens(index, tree)
        (tree / "a_probe.py").unlink()
        index.apply_changes([tree / "a_probe.py"])
        assert index.tags.words_ready.wait(30)
        assert "a_probe.py" not in index.tags._graph.paths
        _rows_hold_the_files_tokens(index, tree)
        assert _first(index) == "b_probe.py"
    finally:
        index.close()


def _as_an_older_tokend_wrote_it(cache: Path) -> int:
    """The cache's rows as a tokend before the whole tokens kept them: keys without the prefix,
    words without the tokens (what follows MARK); how many rows."""
    db = sqlite3.connect(cache)
    rows = 0
    for table, column in (("file_tags", "tags"), ("file_words", "words")):
        for key, text in db.execute(f"SELECT key, {column} FROM {table}").fetchall():
            value = json.loads(text)
            words = value.get("w") if isinstance(value, dict) else value
            if words:
                at = words[0].index(MARK)
                words[:] = [words[0][:at], words[1][:at]]
            db.execute(f"DELETE FROM {table} WHERE key = ?", (key,))
            old = key.removeprefix(SAID)
            db.execute(f"INSERT INTO {table} VALUES (?, ?)", (old, json.dumps(value)))
            rows += 1
    db.commit()
    db.close()
    return rows


def test_a_cache_an_older_tokend_wrote_is_not_read(tmp_path: Path) -> None:
    """Its files are tagged and counted again, their tokens with them (read, they would say no
    token: on main bce5b30 the cache's keys had no prefix and its words no tokens)."""
    tree, cache = probe_tree(tmp_path), tmp_path / "cache.sqlite3"
    first = _index(tree, cache)
    first.close()
    assert _as_an_older_tokend_wrote_it(cache) >= 6
    again = _index(tree, cache)
    try:
        _rows_hold_the_files_tokens(again, tree)
        assert _first(again) == "b_probe.py"
    finally:
        again.close()


def test_a_large_tree_keeps_no_whole_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past LARGE_TREE files (4 here) no file keeps a whole token, whether it was counted before
    the tree grew that large (4 files: every token, until 2 more came) or after (the 2 added),
    and a text focus ranks as it would without them: `a_probe.py` first (the tie by path)."""
    monkeypatch.setattr(whole, "LARGE_TREE", 4)
    tree = probe_tree(tmp_path)
    (tree / "other2.py").unlink()
    (tree / "other3.py").unlink()
    index = _index(tree)
    try:
        _rows_hold_the_files_tokens(index, tree)  # (4 files: every token)
        assert _first(index) == "b_probe.py"
        (tree / "other2.py").write_text("# spam spam spam eggs eggs ham\nprint(spam)\n")
        (tree / "other3.py").write_text("def other_3(x):\n    return x\n")
        index.apply_changes([tree / "other2.py", tree / "other3.py"])
        assert index.tags.words_ready.wait(30)
        graph = index.tags._graph
        assert len(graph.paths) == 6
        assert graph.whole.ids.size == 0 and graph.whole.offsets.tolist() == [0] * 7
        assert _first(index) == "a_probe.py"
    finally:
        index.close()
