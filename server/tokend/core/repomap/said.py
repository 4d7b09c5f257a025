"""What a focus says, read against what each file says (core.repomap.words): the words a task's
text and the focus files say, and BM25 over the files' words alone (each file's length: its
words counted as often as said), the file rank's `said` signal (core.repomap.rank)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tokend.core.repomap import rank as signals_of
from tokend.core.repomap.store import KEY, TagTable
from tokend.core.repomap.words import WordTable, text_said

Array = Any


def said_ids(words: WordTable, on: signals_of.Signals, rows: list[int], text: str) -> Array | None:
    """The ids of the words a text and the files `rows` say (None: no words asked)."""
    asked = [words.vocabulary.ids(text_said(text))] if text and on.words else []
    asked += [words.row_ids(r) for r in rows] if on.file_words else []
    return np.unique(np.concatenate(asked)) if asked else None


def said_scores(table: TagTable, paths: signals_of.PathTerms, words: WordTable,
                ids: Array | None) -> Array:  # fmt: skip
    """BM25 of every file's words against the words `ids` (0 everywhere when None)."""
    if ids is None:
        return np.zeros(len(table.paths))
    empty = np.zeros(0, dtype=KEY)  # no names: the words alone
    return signals_of.lexical(table, paths, empty, words.totals(), (words, ids))
