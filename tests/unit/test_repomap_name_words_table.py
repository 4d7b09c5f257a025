"""The words of the names a file defines are a table of their own (TagTable's `w` columns, issue
22), where b30f9c3 kept them among the file's references. Read apart, they must give BM25
what the one table gave: each file's lexical score for a text and for a file focus, each
file's length, a focus file's keys, and the rank of every kind of focus, bit for bit; whether
they came with the tags, or later from the words' pass (RepoGraph.set_words's `names`), after
the files around them changed. The oracle is a graph of the same files whose packed tags hold
the names' words among their references, as b30f9c3 packed them (PackedTags without words)."""

from __future__ import annotations

import numpy as np

from tokend.core.repomap import rank as signals_of
from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.packed import KEY, PackedTags, names_words
from tokend.core.repomap.tags import Definition, FileTags
from tokend.core.repomap.words import said

VERBS = ["parse", "flush", "probe", "drain"]
NOUNS = ["spindle", "config", "ring", "quux", "socket"]
FOCUSES = [
    Focus(),
    Focus(frozenset({"pkg/m3.py"})),
    Focus(text="the spindle config drains a quux ring"),
    Focus(frozenset({"pkg/m7.py"}), text="flush the socket"),
    Focus(identifiers=frozenset({"probe_ring_4"})),
]


def _name(i: int, k: int) -> str:
    return f"{VERBS[(i + k) % 4]}_{NOUNS[(i * 3 + k) % 5]}_{i % 9}"


def _files(n: int = 30, variant: int = 0) -> dict[str, FileTags]:
    """Files defining names of two words and more (some defined twice, some by several files)
    and referring to the others' names and to the words of their own."""
    out = {}
    for i in range(n):
        defs = tuple(Definition(_name(i, k + variant), k, "") for k in range(2 + i % 4))
        defs += (Definition(f"{NOUNS[i % 5].title()}Handler", 9, ""),)
        refs = {_name(i + 1, 0): 2, _name(i * 7, 1): 1, NOUNS[i % 5]: 3, "spindle_ring": 1}
        out[f"pkg/m{i}.py"] = FileTags(defs, refs)
    return out


def _merged(tags: FileTags) -> PackedTags:
    """b30f9c3's packing: the names' words among the references (counts summed)."""
    p = PackedTags.of(tags)
    counts: dict[int, int] = {}
    for key, n in zip([*p.ref_keys.tolist(), *p.word_keys.tolist()],
                      [*p.ref_counts.tolist(), *p.word_counts.tolist()], strict=True):  # fmt: skip
        counts[key] = counts.get(key, 0) + n
    keys = np.array(sorted(counts), dtype=KEY)
    return PackedTags(p.def_keys, p.def_lines, keys,
                      np.array([counts[k] for k in keys.tolist()], dtype=np.int32))  # fmt: skip


def _without_words(tags: FileTags) -> PackedTags:
    """A first build's tag worker's packing: no names' words made."""
    defs = tags.definitions
    return PackedTags.of_parts([d.line for d in defs], [d.name for d in defs], tags.references,
                               words=False)  # fmt: skip


def _read(graph: RepoGraph) -> list[object]:
    """What BM25 reads of the names (each file's lexical score and length, a file's keys) and
    every focus's ranked definitions and scores."""
    out: list[object] = []
    for focus in FOCUSES:
        rows = graph._focus_rows(focus)
        text_only = bool(focus.text) and not rows
        out.append(graph._lexical(rows, focus.text, text_only).tobytes())
        out.append(graph.rank_with_scores(focus, 40))
        out.append(graph.rank_files(focus))
    paths = graph._paths_terms()
    out.append([a.tobytes() for a in signals_of.lengths(graph.table, paths, graph.words.lengths())])
    out.append([signals_of.file_keys(graph.table, r).tobytes() for r in range(len(graph.paths))])
    return out


def _later(graph: RepoGraph, files: dict[str, FileTags]) -> None:
    """`files` tagged without their names' words (nor what they say), then given both by the
    words' pass."""
    graph.set_files(files, {p: _without_words(t) for p, t in files.items()}, unsaid=set(files))
    names = {p: names_words([d.name for d in t.definitions]) for p, t in files.items()}
    graph.set_words({p: said(t) for p, t in files.items()}, 0, names)


def test_the_names_words_apart_read_as_among_the_references():
    """At once, later, and after a change of some files (one gone, one new, two edited) both
    ways: what BM25 reads and every focus's rank equal b30f9c3's packing's, bit for bit."""
    files = _files()
    old, at_once, later = RepoGraph(), RepoGraph(), RepoGraph()
    old.set_files(files, {p: _merged(t) for p, t in files.items()})
    at_once.set_files(files)
    _later(later, files)
    assert _read(at_once) == _read(old)
    assert _read(later) == _read(old)
    changed: dict[str, FileTags | None] = {"pkg/m5.py": None}
    edited = _files(30, variant=1)
    changed.update({p: edited[p] for p in ("pkg/m3.py", "pkg/m12.py")})
    changed["pkg/new.py"] = _files(40)["pkg/m33.py"]
    old.set_files(changed, {p: _merged(t) for p, t in changed.items() if t is not None})
    at_once.set_files(changed)
    later.set_files({"pkg/m5.py": None})
    _later(later, {p: t for p, t in changed.items() if t is not None})
    assert _read(at_once) == _read(old)
    assert _read(later) == _read(old)


def test_a_file_tagged_again_with_its_words_gets_them():
    """A file packed without its names' words, then tagged again with them, its definitions
    and references unchanged (its row otherwise the same): the words are in its row, as when
    the words' pass gives them; a later packing without words leaves them there."""
    files = _files(6)
    graph, old = RepoGraph(), RepoGraph()
    old.set_files(files, {p: _merged(t) for p, t in files.items()})
    graph.set_files(files, {p: _without_words(t) for p, t in files.items()})
    assert not len(graph.table.w_key)
    graph.set_files(files)
    assert _read(graph) == _read(old)
    graph.set_files(files, {p: _without_words(t) for p, t in files.items()})
    assert _read(graph) == _read(old)
