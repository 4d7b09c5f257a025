"""The repo map's file rank: the graph's rank fused with what else says a file belongs with the
focus (measured by bench.repomap_eval on the co-change of public histories).

Signals, each giving every file a score (0: no evidence):
- `graph`: personalized PageRank over the reference graph (core.repomap.graph).
- `lexical`: BM25 (k1 1.2, b 0.75) of each file's names (the names it defines and refers to,
  and the words of its path) against the focus: the focus files' names, and the words of the
  task's text, and what files say (core.repomap.words) against what the focus says. A name
  many files share is weak evidence (its IDF is low): `get`, `type`, a builtin shadowed
  everywhere weigh next to nothing; a name few files share weighs a lot.
- `said`: BM25 of what each file says alone against what the focus says (core.repomap.said).
- `compounds`: the same against a text's compounds alone (core.repomap.said).
- `folder`: how near a file is to the focus files in the folder tree (the same folder, then
  the parent's ...); measured, and weighed 0 by the fit (worked out only when weighed).
- `near`: the graph's edges between the focus files (a text focus: its best lexical hits, by
  share) and each file, out and in: what the focus refers to, imports, or is referred to by.
- `stem`: how much a file's name says what a focus file's name says (core.repomap.stem).
- `cochange`: how often the repository's history changed a file with a focus file
  (core.repomap.cochange).
Fusion: core.repomap.fusion. Fixed orders throughout: the same files, the same scores."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokend.core.repomap.keys import name_key, sub_words, word_key
from tokend.core.repomap.packed import KEY
from tokend.core.repomap.sieve import buckets, member
from tokend.core.repomap.stem import name_terms
from tokend.core.repomap.store import TagTable
from tokend.core.repomap.vendored import vendored
from tokend.core.repomap.words import WordTable

K1, B = 1.2, 0.75
TERMS_ROWS = 1 << 10  # files whose name terms are gathered at once (lexical)
TERMS_BLOCK = 1 << 14  # terms weighed at once

SEEDS = 5  # a text focus: the best lexical hits that personalize the graph's rank
SEED_WEIGHT = 300.0  # their restart mass (shared by lexical score) against 1.0 spread over all
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

Array = Any
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifiers_in(text: str, defines: Callable[[str], bool]) -> frozenset[str]:
    """The words of `text` (3 characters or more) that the repository defines."""
    return frozenset(w for w in set(_IDENT.findall(text)) if len(w) >= 3 and defines(w))


@dataclass(frozen=True, slots=True)
class Signals:
    """Which signals the file rank fuses (all on: the map's; off: measured without)."""

    graph: bool = True
    lexical: bool = True
    folder: bool = True
    # the graph's own (core.repomap.edges): references through imports, import edges, compounds
    resolve: bool = True
    imports: bool = True
    specific: bool = True
    # a task's text: read against what each file says (core.repomap.words); its best lexical
    # hits personalizing the graph's rank
    words: bool = True
    seed: bool = True
    file_words: bool = True  # a file focus: what the focus files say, against what files say
    said: bool = True  # BM25 of what the focus says against what files say, a signal of its own
    compounds: bool = True  # a text's identifiers of two words or more, against what files say
    whole: bool = True  # a text's tokens whole, against each file's (core.repomap.whole)
    near: bool = True  # the graph's edges between the focus (or a text's best hits) and a file
    stem: bool = True  # a file focus: the words of a file's name against the focus file's
    cochange: bool = True  # a file focus: the commits a file changed in with it (its history)


def text_keys(text: str) -> Array:
    """The keys of a task's text: its identifiers (3 characters or more) and their words (as
    words of definitions and paths)."""
    names = set(_WORD.findall(text))
    keys = {name_key(n) for n in names} | {word_key(w) for n in names for w in sub_words(n)}
    return np.unique(np.array(sorted(keys), dtype=KEY))


@dataclass(frozen=True, slots=True)
class PathTerms:
    """What the file rank reads of the paths (made again only when the paths change)."""

    offsets: Array  # int64: path i's word keys are keys[offsets[i]:offsets[i+1]]
    keys: Array  # uint64
    folders: list[tuple[str, ...]]  # the distinct folders, sorted
    folder_of: Array  # int32: each path's folder, an index into `folders`
    names: tuple[Array, Array]  # each file name's words (core.repomap.stem.name_terms)
    vendored: Array  # bool: a vendored file's path (core.repomap.vendored)


def path_terms(paths: list[str]) -> PathTerms:
    """The keys of each path's words (folder and file names; the extension left out), unique
    per path, and each path's folder."""
    folder_names = sorted({tuple(p.split("/")[:-1]) for p in paths})
    index = {f: i for i, f in enumerate(folder_names)}
    folder_of = np.array([index[tuple(p.split("/")[:-1])] for p in paths], dtype=np.int32)
    offsets = np.zeros(len(paths) + 1, dtype=np.int64)
    keys: list[int] = []
    for i, path in enumerate(paths):
        stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
        words = sorted({word_key(w) for w in sub_words(stem)})
        keys.extend(words)
        offsets[i + 1] = len(keys)
    key_array, flags = np.array(keys, dtype=KEY), vendored(paths)
    return PathTerms(offsets, key_array, folder_names, folder_of, name_terms(paths), flags)


def query(table: TagTable, focus_rows: list[int], text: str) -> Array:
    """The lexical query of a focus: its files' keys (`file_keys`) and its text's."""
    keys = [file_keys(table, r) for r in focus_rows]
    if text:
        keys.append(text_keys(text))
    return np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=KEY)


def file_keys(table: TagTable, row: int) -> Array:
    """The names a file defines or refers to and its definitions' words (keys, unique)."""
    refs = table.r_key[table.r_off[row] : table.r_off[row + 1]]
    words = table.w_key[table.w_off[row] : table.w_off[row + 1]]
    defs = table.keys_at(int(table.d_off[row]), int(table.d_off[row + 1]))
    return np.unique(np.concatenate([refs, words, defs]))


def lengths(table: TagTable, paths: PathTerms, words: Array) -> tuple[Array, Array]:
    """Each file's BM25 length, with and without the `words` it says (a count a file)."""
    names = np.diff(table.r_off) + np.diff(table.w_off) + np.diff(table.d_off)
    names = (names + np.diff(paths.offsets)).astype(float)
    return names + words, names


def seeds(score: Array, count: int) -> dict[int, float]:
    """The `count` best files by lexical score (score > 0), each with its share of their
    scores; ties fall to the row (fixed)."""
    best = np.lexsort((np.arange(len(score)), -score))[:count]
    best = best[score[best] > 0]
    total = float(score[best].sum())
    return {int(r): float(score[r]) / total for r in best.tolist()} if total else {}


def lexical(
    table: TagTable,
    paths: PathTerms,
    query: Array,
    length: Array,
    said: tuple[WordTable, Array] | None = None,
) -> Array:
    """BM25 of every file against the query's keys (unique): its references and its
    definitions' names' words (each counted as often as it occurs), definitions and path
    words are its terms; `length`: each file's;
    `said`: what files say (core.repomap.words) and the query's words in it (ids), terms of
    their own."""
    n = len(table.paths)
    score = np.zeros(n)
    if not n:
        return score
    norm = K1 * (1 - B + B * length / max(float(length.mean()), 1.0))
    parts = _name_terms(table, paths, query)  # (rows, places, counts), files in order
    df = np.zeros(len(query), dtype=np.int64)  # (a term a file and key)
    for _, place, _ in parts:
        df += np.bincount(place, minlength=len(query))
    for rows, place, tf in parts:  # in (row, key) order: the same sums every time
        for start in range(0, len(rows), TERMS_BLOCK):
            at = slice(start, start + TERMS_BLOCK)
            np.add.at(score, rows[at], bm25(n, df[place[at]], tf[at], norm[rows[at]]))
    if said is not None and len(said[1]):
        words, ids = said
        df = words.document_counts(ids)
        for rows, hit, tf in words.hits(ids):  # whole rows a block: each file's sum in one
            term = bm25(n, df[hit], tf, norm[rows])
            order = np.lexsort((term, rows))  # a file's word terms smallest first: the same
            np.add.at(score, rows[order], term[order])  # sums whatever the ids (by process)
    return score


def bm25(n: int, df: Array, tf: Array, norm: Array) -> Array:
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    return idf * tf * (K1 + 1) / (tf + norm)


def _name_terms(
    table: TagTable, paths: PathTerms, query: Array
) -> list[tuple[Array, Array, Array]]:
    """Each (file, key) term of the query's keys: its row, its key's place in the query and
    its count (int32 each), in (row, key) order, in parts of TERMS_ROWS files (issue 22:
    gathered at once, every hit's row, key and count were held in 64-bit columns, sorted and
    copied, 7-11 MiB of a kernel map request's peak; joined, the parts would be held twice)."""
    if not len(query):
        return []
    groups = table.groups()
    q_groups: Array = np.searchsorted(groups, query)
    found: Array = q_groups < len(groups)
    found[found] = groups[q_groups[found]] == query[found]
    defined = (np.flatnonzero(found), q_groups[found])  # the defined keys' places, groups
    sieves = (buckets(query), buckets(defined[1]))
    return [
        _block_terms(table, paths, query, defined, sieves, start)
        for start in range(0, len(table.paths), TERMS_ROWS)
    ]


def _block_terms(
    t: TagTable,
    paths: PathTerms,
    query: Array,
    defined: tuple[Array, Array],
    sieves: tuple[Array, Array],
    a: int,
) -> tuple[Array, Array, Array]:
    """_name_terms of the files a..a+TERMS_ROWS-1: references, the names' words, definitions
    and path words."""
    b = min(a + TERMS_ROWS, len(t.paths))
    r0, d0, p0, w0 = int(t.r_off[a]), int(t.d_off[a]), int(paths.offsets[a]), int(t.w_off[a])
    r_hit = r0 + member(t.r_key[r0 : int(t.r_off[b])], query, sieves[0])
    w_hit = w0 + member(t.w_key[w0 : int(t.w_off[b])], query, sieves[0])
    d_hit = d0 + member(t.d_group[d0 : int(t.d_off[b])], defined[1], sieves[1])
    p_hit = p0 + member(paths.keys[p0 : int(paths.offsets[b])], query, sieves[0])
    rows = np.concatenate([
        np.searchsorted(t.r_off, r_hit, side="right") - 1,
        np.searchsorted(t.w_off, w_hit, side="right") - 1,
        np.searchsorted(t.d_off, d_hit, side="right") - 1,
        np.searchsorted(paths.offsets, p_hit, side="right") - 1,
    ]).astype(np.int32)  # fmt: skip
    place = np.concatenate([
        np.searchsorted(query, t.r_key[r_hit]),
        np.searchsorted(query, t.w_key[w_hit]),
        defined[0][np.searchsorted(defined[1], t.d_group[d_hit])],
        np.searchsorted(query, paths.keys[p_hit]),
    ]).astype(np.int32)  # fmt: skip
    ones = np.ones(len(d_hit) + len(p_hit), dtype=np.int32)
    tf = np.concatenate([t.r_count[r_hit], t.w_count[w_hit], ones])
    order = np.lexsort((place, rows))
    rows, place, tf = rows[order], place[order], tf[order]
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (rows[1:] != rows[:-1]) | (place[1:] != place[:-1])
    at = np.flatnonzero(new)
    tf = np.add.reduceat(tf, at) if len(at) else tf
    return rows[at], place[at], tf.astype(np.int32)


def folder(paths: PathTerms, focus_rows: list[int]) -> Array:
    """Nearness in the folder tree to the nearest focus file: 1 / (1 + folders between),
    worked out once per distinct folder."""
    homes = [paths.folders[paths.folder_of[r]] for r in focus_rows]
    if not homes:
        return np.zeros(len(paths.folder_of))
    near = np.zeros(len(paths.folders))
    for i, parts in enumerate(paths.folders):
        best = None
        for home in homes:
            common = 0
            for a, b in zip(home, parts, strict=False):
                if a != b:
                    break
                common += 1
            between = len(home) - common + len(parts) - common
            best = between if best is None else min(best, between)
        near[i] = 1.0 / (1.0 + (best or 0))
    return np.asarray(near[paths.folder_of])


def near(offsets: Array, targets: Array, weights: Array, focus: dict[int, float]) -> Array:
    """Each file's edge weight to and from the `focus` rows (row -> share), in CSR arrays (a
    row's weights over its total, core.repomap.edges): out-edges of the focus rows, in-edges
    from every row; summed in row order."""
    n = len(offsets) - 1
    score = np.zeros(n)
    share = np.zeros(n)
    for row, part in sorted(focus.items()):
        share[row] = part
        lo, hi = int(offsets[row]), int(offsets[row + 1])
        np.add.at(score, targets[lo:hi], part * weights[lo:hi])
    into = np.flatnonzero((share > 0)[targets])  # edges into a focus row (a byte an edge)
    if len(into):
        sources = np.searchsorted(offsets, into, side="right") - 1
        np.add.at(score, sources, share[targets[into]] * weights[into])
    return score
