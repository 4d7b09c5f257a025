"""What a focus says, read against what each file says (core.repomap.words): the rank's `said`
signal (core.repomap.rank), BM25 over the files' words alone (each file's length: its words
counted as often as said), and a text's `compounds`.

The query: a task's text's words (core.repomap.tags.text_words: its words and compounds), and
what the focus files say. A file focus's query is cut to its RARE rarest words that another file
says too (fewest files first, ties by id): a file's common words (`return`, `struct`) say
little of which files belong with it, and the cut bounds the terms read on a large tree.

`compounds`: the same BM25 with a text's compounds alone as the query, its identifiers of two
words or more, whole (`parseConfig` -> parseconfig, `drive_client` -> drive_client): the code a
task names, not the words it is made of. Among the text's words and their parts (`said`), a long
file saying `parse` and `config` often leads; a compound is said by the files that use that name.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from tokend.core.repomap.fusion import Fusion
from tokend.core.repomap.keys import sub_words, word_id
from tokend.core.repomap.rank import K1, B, Signals, bm25
from tokend.core.repomap.tags import text_words
from tokend.core.repomap.words import WordTable

RARE = 64  # a file focus's words asked (bench.repomap_fit: +0.011 on the tuning file mean)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # core.repomap.tags.spoken's tokens

Array = Any


def text_ids(text: str) -> Array:
    """The ids of a task's text's words (ascending)."""
    return np.unique(np.fromiter(text_words(text), dtype=np.int64))


def compound_ids(text: str) -> Array:
    """The ids of a text's compounds (ascending): its identifier-like tokens of two words or
    more, lowered whole, as core.repomap.tags.spoken counts them in what files say."""
    found = {word_id(t.lower()) for t in set(_IDENT.findall(text)) if len(sub_words(t)) >= 2}
    return np.array(sorted(found), dtype=np.int64)


def said_signals(words: WordTable, n: int, on: Signals, fusion: Fusion, rows: list[int],
                 text: str) -> dict[str, Array]:  # fmt: skip
    """The signals read from what the `n` files say that `fusion` uses: `said` of the focus,
    and `compounds` of a text alone (no focus files)."""
    said, compounds = on.said and fusion.uses("said"), on.compounds and fusion.uses("compounds")
    ids = query_ids(words, on, rows, text) if said else None
    if not (compounds and text and not rows):
        return {"said": said_scores(words, n, rows, ids, text)} if said else {}
    parts = [ids if ids is not None else np.zeros(0, dtype=np.int64), compound_ids(text)]
    got = _text_scores(words, n, parts)  # one pass over the table's words for both
    return {"said": got[0], "compounds": got[1]} if said else {"compounds": got[1]}


def _text_scores(words: WordTable, n: int, parts: list[Array]) -> list[Array]:
    """said_scores(words, n, [], ids) for each ids of `parts` (ascending), from one pass over
    where their words are said (the table's every entry sifted once, not once a part): a
    file's terms of a part are summed in said_scores's order, so each score is its own."""
    scores = [np.zeros(n) for _ in parts]
    ids = np.unique(np.concatenate(parts))
    if not len(ids) or not n:
        return scores
    df, length = words.document_counts(ids), words.totals()
    norm = K1 * (1 - B + B * length / max(float(length.mean()), 1.0))
    mine = [None if len(part) == len(ids) else np.isin(ids, part) for part in parts]
    for hit_rows, at, tf in words.hits(ids):
        term = bm25(n, df[at], tf, norm[hit_rows])
        for score, keep in zip(scores, mine, strict=True):
            r, t = (hit_rows, term) if keep is None else (hit_rows[keep[at]], term[keep[at]])
            order = np.lexsort((t, r))
            np.add.at(score, r[order], t[order])
    return scores


def reads_words(on: Signals, files: bool, text: str) -> bool:
    """Whether the rank of a focus with focus `files` (any) and `text` reads what files say
    (query_ids asks for words) or the words of the names they define (BM25 of a focus's
    names, core.repomap.rank.lexical: the words' pass gives them, core.repomap.name_words):
    an unfocused map, or one of identifiers alone, does not."""
    return (
        bool((text or files) and on.lexical) or bool(text and on.words) or (files and on.file_words)
    )


def query_ids(words: WordTable, on: Signals, rows: list[int], text: str) -> Array | None:
    """The ids of the words a text and the files `rows` say (ascending; None: none asked)."""
    asked = [text_ids(text)] if text and on.words else []
    asked += [words.row_ids(r) for r in rows] if on.file_words else []
    return np.unique(np.concatenate(asked)) if asked else None


def said_scores(
    words: WordTable, n: int, rows: list[int], ids: Array | None, text: str = ""
) -> Array:
    """BM25 of every file's words against the words `ids` (0 everywhere when None); with focus
    `rows`, against the RARE rarest of them another file says too, and every word of `text`."""
    score = np.zeros(n)
    if ids is None or not len(ids) or not n:
        return score
    df = words.document_counts(ids)
    if rows:
        spoken = np.isin(ids, text_ids(text)) if text else np.zeros(len(ids), dtype=bool)
        order = np.lexsort((ids, df))
        rare = order[(df[order] >= 2) & ~spoken[order]][:RARE]
        kept = np.union1d(rare, np.flatnonzero(spoken))
        ids, df = ids[kept], df[kept]
        if not len(ids):
            return score
    length = words.totals()
    norm = K1 * (1 - B + B * length / max(float(length.mean()), 1.0))
    for hit_rows, at, tf in words.hits(ids):  # whole rows a block: each file's sum in one
        term = bm25(n, df[at], tf, norm[hit_rows])
        order = np.lexsort((term, hit_rows))  # a file's terms smallest first: fixed sums
        np.add.at(score, hit_rows[order], term[order])
    return score
