"""Tables of rows kept as flat columns (a row's entries are offsets[i]:offsets[i+1] of each
column): the row of every entry, a table spliced from runs of old rows and new rows (a copy,
never a rebuild of the rows kept), and the group columns of core.repomap.store renumbered or
looked up a block at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RENUMBER_BLOCK = 1 << 18  # entries renumbered at once (bounds a change's extra memory)
Array = Any  # a numpy array (numpy's own annotations would not add much here)


def rows_of(offsets: Array) -> Array:
    """The row of every entry of a table whose rows start at `offsets` (length rows + 1)."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int32), np.diff(offsets))


def splice_offsets(offsets: Array, runs: Sequence[Any]) -> Array:
    """The row offsets of a table of rows (entries of row i: offsets[i]:offsets[i+1] of each
    column) rebuilt from `runs`, in order: (a, b) takes old rows a..b-1 whole, a tuple of
    arrays is one new row."""
    lengths: list[Array] = []
    for run in runs:
        if isinstance(run[0], (int, np.integer)):
            a, b = int(run[0]), int(run[1])
            if b > a:
                lengths.append(np.diff(offsets[a : b + 1]))
        else:
            lengths.append(np.array([len(run[0])], dtype=np.int64))
    counts = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    new_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_offsets[1:])
    return new_offsets


def splice_column(offsets: Array, column: Array, runs: Sequence[Any], index: int) -> Array:
    """Column `index` of the table splice_offsets' `runs` make (one column at a time: a caller replacing
    its columns one by one holds one old column beside its new one, not the whole table)."""
    parts: list[Array] = []
    for run in runs:
        if isinstance(run[0], (int, np.integer)):
            a, b = int(run[0]), int(run[1])
            if b > a:
                parts.append(column[offsets[a] : offsets[b]])
        else:
            parts.append(run[index])
    return np.concatenate(parts) if parts else column[:0]


@dataclass(slots=True)
class Runs:
    """The rows of two tables (definitions, references) being spliced, as splice_offsets'
    `runs`, with their paths and where each old row went (`remap`: -1 until kept)."""

    remap: Array
    paths: list[str] = field(default_factory=list)
    d_runs: list[Any] = field(default_factory=list)
    r_runs: list[Any] = field(default_factory=list)

    def keep(self, old_paths: Sequence[str], a: int, b: int) -> None:
        """Old rows a..b-1, whole."""
        self.remap[a:b] = np.arange(len(self.paths), len(self.paths) + b - a)
        self.paths.extend(old_paths[a:b])
        self.d_runs.append((a, b))
        self.r_runs.append((a, b))

    def add(self, path: str, d_row: tuple[Array, ...], r_row: tuple[Array, ...]) -> None:
        """A new row: its path and its entries' columns in each table."""
        self.paths.append(path)
        self.d_runs.append(d_row)
        self.r_runs.append(r_row)


def renumber_column(column: Array, renumber: Array) -> None:
    """column[i] = renumber[column[i]] where column[i] >= 0, in place, a block at a time."""
    for start in range(0, len(column), RENUMBER_BLOCK):
        part = column[start : start + RENUMBER_BLOCK]  # a view: assigned in place
        known = part >= 0
        part[known] = renumber[part[known]]


def group_of(groups: Array, keys: Array) -> Array:
    """Each key's group, -1 for a name nobody defines: looked up RENUMBER_BLOCK keys at a time
    into the int32 column, so beside it only a block's positions are held (issue 22: at once,
    the kernel's first map request held 21 bytes a reference and 12 a definition beside the
    columns, 16 MiB for 8,000 of its files)."""
    out = np.empty(len(keys), dtype=np.int32)
    for start in range(0, len(keys), RENUMBER_BLOCK):
        part = keys[start : start + RENUMBER_BLOCK]
        at: Array = np.searchsorted(groups, part)
        found: Array = at < len(groups)
        found[found] = groups[at[found]] == part[found]
        at[~found] = -1
        out[start : start + len(part)] = at
    return out
