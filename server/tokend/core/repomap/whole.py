"""A text's `whole` signal (issue 24's sixteenth pass): BM25 of each file's whole tokens against
the text's, as the BM25 baseline reads them (bench.repomap_eval_baselines.BM25): identifiers of 3
characters or more, whole and lowered (`__init__`, `reg32`, `parse_config`), a file's text's
and its path's, the text's each once. Where `said` reads words and their parts, this reads the
names as written: fused by its own reciprocal rank beside the rest (core.repomap.fusion).

A file's tokens are counted with its words (core.repomap.text.count_words: after MARK, its
WHOLE_MAX most frequent) and kept in a second word table (core.repomap.words.WordTable: 5 bytes
a token), its path's added here; a file's length is its kept tokens' counts (each at most 255).
Every token is kept on a tree of up to LARGE_TREE files (keeps_whole); a larger one keeps none
(its rows kept until then are emptied when the tree passes LARGE_TREE; its words are counted
without them, and a tree back under LARGE_TREE counts them again: service.workspace.word_pass),
and its text focus ranks as before:
the kernel's 55,556 files say 320 tokens a file (85 MiB of table), and a cut to each file's
most frequent loses the rare tokens a text names (bench.repomap_whole: cut to 256 tokens a file
or fewer, the tuning trees' groups go down; to 64, the mean falls below the fusion without it).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tokend.core.repomap.said import said_scores
from tokend.core.repomap.text import MARK, WHOLE_MAX, WHOLE_SEED, WORDS_MAX
from tokend.core.repomap.words import SaidArrays, WordTable, sections

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")  # the BM25 baseline's tokens

Array = Any
Said = Mapping[int, int]
LARGE_TREE = 10_000  # files: a larger tree keeps no whole tokens


def keeps_whole(n: int) -> bool:
    """Whether a tree of `n` files keeps its files' whole tokens (its words are counted with
    them: core.repomap.text.count_words's `whole`)."""
    return n <= LARGE_TREE


def token_ids(text: str) -> dict[int, int]:
    """The ids of the tokens of `text` (lowered), counted."""
    out: dict[int, int] = {}
    for token in _TOKEN.findall(text):
        key = zlib.crc32(token.lower().encode("ascii"), WHOLE_SEED)
        if key != MARK:
            out[key] = out.get(key, 0) + 1
    return out


def with_path(tokens: Said, path: str) -> Said:
    """A file's whole tokens and its path's (a token said by both: its counts summed by the
    table, core.repomap.words.WordTable.changed)."""
    mine = token_ids(path)
    if isinstance(tokens, SaidArrays):
        ids = np.concatenate([tokens.ids, np.fromiter(mine, np.uint32, len(mine))])
        counts = np.concatenate([tokens.counts, np.fromiter(mine.values(), np.uint32, len(mine))])
        return SaidArrays.of(ids, counts)
    out = dict(tokens)
    for key, n in mine.items():
        out[key] = out.get(key, 0) + n
    return out


def whole_changed(
    words: WordTable,
    whole: WordTable,
    rows: Mapping[str, int | None],
    spoken: Mapping[str, Said],
    n: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What `spoken` (path -> what it says, core.repomap.text.count_words's) changes in each
    table of a tree of `n` files: WordTable.changed of the words, and of the whole tokens with
    the path's (a file saying nothing yet, its words not counted: no tokens either); the files
    of `rows` alone."""
    spoken = {path: spoken[path] for path in rows}
    parted = {path: sections(said) for path, said in spoken.items()}
    said = {path: got[0] for path, got in parted.items()}
    if not keeps_whole(n):  # (none kept: no path's tokens worked out to be dropped)
        tokens: dict[str, Said] = dict.fromkeys(parted, {})
    else:
        tokens = {p: with_path(got[1], p) if spoken[p] else {} for p, got in parted.items()}
    return words.changed(rows, said), whole.changed(rows, tokens)


def _emptied(whole: WordTable, n: int) -> None:
    """Every row emptied (its arrays let go), once the tree has more than LARGE_TREE files."""
    if not keeps_whole(n) and len(whole.ids):
        whole.empty(n)


def said_apply(
    words: WordTable,
    whole: WordTable,
    changes: tuple[Mapping[str, Any], Mapping[str, Any]],
    row: Callable[[str], int | None],
    remap: Array | None,
    n: int,
    more: int = 0,
) -> None:
    """whole_changed's `changes` applied to each table (WordTable.apply) once the graph's rows
    moved (`remap`), `row` the path's row now; room for the words of `more` files still to
    come (the words' pass). A table neither changed nor moved is left as it is."""
    many = WHOLE_MAX if keeps_whole(n) else 0
    for table, new, most in ((words, changes[0], WORDS_MAX), (whole, changes[1], many)):
        if new or remap is not None or len(table.offsets) != n + 1:
            rows = {r: w for p, w in new.items() if (r := row(p)) is not None}
            table.apply(remap, rows, n, more * most)
    _emptied(whole, n)


def whole_scores(whole: WordTable, n: int, text: str) -> Array:
    """BM25 of every file's whole tokens against the text's (each once)."""
    ids = np.array(sorted(token_ids(text)), dtype=np.int64)
    return said_scores(whole, n, [], ids)
