"""The words of the names a file defines (`parse_spindle_config` -> parse, spindle, config), which
BM25 matches a focus with, are a table of their own (core.repomap.name_words): a first build's
tag workers leave them out, and the words' pass makes them after the first map from the names
the cache keeps (issue 22: they were 44-47% of a kernel file's reference entries, keyed, sent,
spliced and looked up before a first map that reads none of them).

The guards: every kind of map (no focus, a file focus, a text focus, identifiers; with whole
tokens and, on a tree past a small LARGE_TREE, without) made by real tag and word workers, live
after edits and deletes (a few files, parsed in process, and all of them, parsed by the workers
again), and after a restart on the same cache, is a fresh build's on an empty cache with no
workers (every word made with its tags: the path every word took before): the text byte for
byte and every file's score. And what a first build's workers send: no names' words among a
file's references, none in the table until the words' pass, then each file's, as the keys'
definition gives them from the names its cached tags hold (tests/unit/test_repomap_packing's)."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tokend.adapters.tag_workers import POOL_MIN_FILES
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap import whole
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import tags as workspace_tags
from tokend.service.workspace.index import WorkspaceIndex

FILES = POOL_MIN_FILES + 30  # a first build's tags go to the tag workers
VERBS = ["parse", "flush", "probe", "drain", "spin"]
NOUNS = ["spindle", "config", "frobnicator", "quux", "ring", "buffer", "socket"]
FOCUSES = [
    Focus(),
    Focus(frozenset({"pkg1/m8.py"})),
    Focus(frozenset({"drv/d3.c"})),
    Focus(text="the spindle config drains when the frobnicator ring flushes"),
    Focus(text="SpindleProber parse_quux_buffer"),
    Focus(identifiers=frozenset({"flush_ring_12"})),
]
_o200k = load_encoding("o200k_base")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _count(text: str) -> int:
    return len(_o200k.encode_ordinary(text))


def _name(i: int, k: int) -> str:
    return f"{VERBS[(i + k) % 5]}_{NOUNS[(i * 3 + k) % 7]}_{NOUNS[(i + 2 * k) % 7]}_{i}"


def _py(i: int, variant: int = 0) -> str:
    """Functions and a class whose names' words a focus's text says; calls into other files."""
    camel = NOUNS[i % 7].title() + VERBS[(i + variant) % 5].title() + "er"
    out = [f"# module {i}\nclass {camel}{i}:\n    def {_name(i, 9 + variant)}(self):\n"]
    out.append(f"        return {_name((i + 1) % FILES, 0)}(self)\n\n")
    for k in range(3 + (i + variant) % 3):
        out.append(f"def {_name(i, k + variant)}(value):\n")
        out.append(f"    return {_name((i * 7 + k) % FILES, 1)}(value) + {k}\n\n")
    return "".join(out)


def _c(i: int, variant: int = 0) -> str:
    out = [f"#define {NOUNS[i % 7].upper()}_{VERBS[i % 5].upper()}_MAX_{i} {i}\n"]
    out.append(f"struct {NOUNS[(i + 1) % 7]}_{NOUNS[(i + variant) % 7]}_state {{ int ring; }};\n")
    for k in range(2 + (i + variant) % 4):
        out.append(f"int {_name(i + 1000, k + variant)}(int x) {{ return {_name(i, 1)}(x); }}\n")
    return "".join(out)


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for i in range(FILES):
        path = tree / (f"pkg{i % 4}/m{i}.py" if i % 5 else f"drv/d{i}.c")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_py(i) if i % 5 else _c(i))
    return tree


def _index(tree: Path, cache: Path | None, workers: int) -> WorkspaceIndex:
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
    index.tags.pool_workers = workers
    index.build()
    assert index.tags.words_ready.wait(60)
    return index


def _maps(index: WorkspaceIndex) -> list[tuple[str, list[tuple[str, float]]]]:
    """Each focus's map text (1,024 tokens) and every file's score, in rank order."""
    out = []
    for focus in FOCUSES:
        fitted = index.tags.repo_map(focus, 1024, _count, "o200k")
        with index.tags._lock:
            scores = index.tags._graph.rank_files(focus)
        out.append((fitted.text, scores))
    return out


def _fresh(tree: Path) -> list[tuple[str, list[tuple[str, float]]]]:
    """The maps of a fresh build on an empty cache, parsed in process (no workers)."""
    index = _index(tree, None, workers=0)
    try:
        return _maps(index)
    finally:
        index.close()


def _apply(index: WorkspaceIndex, paths: list[Path]) -> None:
    index.apply_changes(paths)
    assert index.tags.words_ready.wait(60)


@pytest.mark.parametrize("large_tree", [None, 50], ids=["whole tokens", "no whole tokens"])
def test_every_map_with_the_names_words_later_is_a_fresh_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large_tree: int | None
) -> None:
    """Built by the workers, live after a few edits and deletes (and a new file) and after all
    files changed (the workers again: on a tree without whole tokens, its words and names'
    words counted after its tags), then after a restart on the same cache: each time every
    map is a fresh build's. (A speed change: on b30f9c3 these pass too.)"""
    if large_tree is not None:
        monkeypatch.setattr(whole, "LARGE_TREE", large_tree)
    tree, cache = _tree(tmp_path), tmp_path / "cache.sqlite3"
    index = _index(tree, cache, workers=1)
    try:
        maps = _maps(index)
        assert maps[3][0] != maps[0][0] and maps[4][0] != maps[0][0]  # the texts rank files
        assert maps == _fresh(tree)
        edited = [tree / "pkg1/m1.py", tree / "pkg3/m7.py", tree / "drv/d10.c"]
        for path in edited:
            i = int(re.sub(r"\D", "", path.name))
            path.write_text(_py(i, 2) if path.suffix == ".py" else _c(i, 2))
        gone = [tree / "pkg2/m2.py", tree / "drv/d15.c"]
        for path in gone:
            path.unlink()
        new = tree / "pkg0/spindle_quux_parser.py"
        new.write_text(_py(3, 1).replace("_3", "_new"))
        _apply(index, [*edited, *gone, new])
        assert _maps(index) == _fresh(tree)
        every = sorted(tree.rglob("*.[pc]*"))
        for n, path in enumerate(every):
            said = f"# {n}\n" if path.suffix == ".py" else f"// {n}\n"
            path.write_text(path.read_text().replace("_1(", f"_1{n % 3}(") + said)
        _apply(index, every)
        live = _maps(index)
    finally:
        index.close()
    fresh = _fresh(tree)
    assert live == fresh
    again = _index(tree, cache, workers=1)
    try:
        assert _maps(again) == fresh
    finally:
        again.close()


def _key(name: str) -> int:
    """A name's key as tests/unit/test_repomap_packing.py writes the keys' definition."""
    words = [w for w in _WORDS.findall(name) if len(w) >= 3]
    raw = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    bits = int.from_bytes(raw, "little") & ~3
    return bits | (2 if len(words) >= 2 else 0) | (1 if name.startswith("_") else 0)


def _names_words(cache: Path) -> dict[str, dict[int, int]]:
    """Each cached file's names' words (key -> how many of its definitions say it), by the
    keys' definition, from the names its cached tags hold; by content hash."""
    db = sqlite3.connect(cache)
    try:
        rows = db.execute("SELECT key, tags FROM file_tags").fetchall()
    finally:
        db.close()
    out: dict[str, dict[int, int]] = {}
    for key, text in rows:
        words: dict[int, int] = {}
        for name, _line, _text in json.loads(text)["d"]:
            for word in _WORDS.findall(name):
                if len(word) >= 3:
                    k = _key("\0" + word.lower())
                    words[k] = words.get(k, 0) + 1
        out[key.rsplit(":", 1)[1]] = words
    return out


def test_a_first_builds_tag_workers_send_no_names_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the first build's tags are in (its first map can be made), no file's references
    hold the words of the names it defines and the table holds none (b30f9c3: each file's
    names' words among its references, fails); once the words' pass is done, each file's row
    is its names' words as the keys' definition gives them, and the unfocused map is the one
    made before them."""
    seen: dict[str, tuple[set[int], int]] = {}  # path -> its references, its names' words
    first: list[str] = []  # the unfocused map then
    real = workspace_tags.WorkspaceTags.count_words

    def first_map_then_words(self: workspace_tags.WorkspaceTags, *args: object) -> None:
        t = self._graph.table
        own = getattr(t, "w_off", np.zeros(len(t.paths) + 1, dtype=np.int64))
        for row, path in enumerate(self._graph.paths):
            refs = set(t.r_key[t.r_off[row] : t.r_off[row + 1]].tolist())
            seen[path] = (refs, int(own[row + 1] - own[row]))
        first.append(self.repo_map(Focus(), 1024, _count, "o200k").text)
        real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(workspace_tags.WorkspaceTags, "count_words", first_map_then_words)
    tree, cache = _tree(tmp_path), tmp_path / "cache.sqlite3"
    index = _index(tree, cache, workers=1)
    try:
        by_hash = _names_words(cache)
        graph = index.tags._graph
        t = graph.table
        assert len(seen) == FILES
        for path, (refs, words) in seen.items():
            expected = by_hash[hashlib.sha256((tree / path).read_bytes()).hexdigest()]
            assert len(expected) >= 3, path  # (every file defines names of 3 words or more)
            assert not refs & set(expected), path  # none of its names' words among them
            assert words == 0, path
            row = graph.paths.index(path)
            span = slice(t.w_off[row], t.w_off[row + 1])
            got = dict(zip(t.w_key[span].tolist(), t.w_count[span].tolist(), strict=True))
            assert got == expected, path
        unfocused = index.tags.repo_map(Focus(), 1024, _count, "o200k-again").text
        assert first == [unfocused] and unfocused == _fresh(tree)[0][0]
    finally:
        index.close()
