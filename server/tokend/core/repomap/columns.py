"""Tables of rows kept as flat columns (a row's entries are offsets[i]:offsets[i+1] of each
column): the row of every entry, a table spliced from runs of old rows and new rows (never a
rebuild of the rows kept), and the group columns of core.repomap.store renumbered or looked up
a block at a time.

A column spliced by `splice_in_place` is a view of a buffer a little longer than the column
(SPARE): a change that fits moves the kept rows within that buffer, a block at a time, so no
copy of the column is held beside it (issue 22: on the kernel a one-file change held the
references' keys, 40 MB, and the words' ids, 34 MB, twice for a moment). Only a change that
outgrows the room copies the column, into a new buffer with room again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RENUMBER_BLOCK = 1 << 18  # entries renumbered at once (bounds a change's extra memory)
MOVE_BLOCK = 1 << 18  # entries moved at once within a column's buffer (numpy copies an
# overlapping source first: this bounds that copy)
FIND_BLOCK = 1 << 16  # entries of a column searched at once (found_at)
SPARE_SHARE = 256  # a spliced column's buffer has room for 1/SPARE_SHARE more entries,
SPARE_MIN = 4096  # and at least this many
GROW_SHARE = 2  # a column that outgrows its buffer gets one with room for 1/GROW_SHARE more
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
    """Column `index` of the table splice_offsets' `runs` make, copied into a new buffer with
    room (SPARE_SHARE) for splice_in_place (one column at a time: a caller replacing its
    columns one by one holds one old column beside its new one, not the whole table)."""
    parts: list[Array] = []
    for run in runs:
        if isinstance(run[0], (int, np.integer)):
            a, b = int(run[0]), int(run[1])
            if b > a:
                parts.append(column[offsets[a] : offsets[b]])
        else:
            parts.append(run[index])
    out = with_room(sum(len(part) for part in parts), column.dtype)
    if parts:
        np.concatenate(parts, out=out)
    return out


def with_room(size: int, dtype: Any, room: int = 0) -> Array:
    """An empty column of `size` entries whose buffer has room for splice_in_place: `room`
    more entries when the caller knows it will need them (a buffer's pages are not resident
    until they are written: only the entries written count in the daemon's memory)."""
    return np.empty(size + max(SPARE_MIN, size // SPARE_SHARE, room), dtype=dtype)[:size]


def splice_in_place(
    offsets: Array, column: Array, runs: Sequence[Any], index: int, room: int = 0
) -> Array:
    """splice_column's column, made in the column's own buffer when it fits there (the kept
    rows moved, the new rows written: beside the column, at most MOVE_BLOCK entries), else in
    a new buffer with room for later changes. The column must be one this function or
    splice_column made (or an array of its own): its buffer is written. A new buffer has
    room for `room` more entries at least."""
    kept: list[tuple[int, int, int]] = []  # (where an old run goes, its start, its end)
    added: list[tuple[int, Array]] = []  # (where a new row goes, its entries)
    at = 0
    for run in runs:
        if isinstance(run[0], (int, np.integer)):
            start, end = int(offsets[int(run[0])]), int(offsets[int(run[1])])
            if end > start:
                kept.append((at, start, end))
                at += end - start
        elif len(run[index]):
            added.append((at, run[index]))
            at += len(run[index])
    return _placed(column, kept, added, at, room)


def edited_in_place(column: Array, gone: Array, at: Array, values: Array) -> Array:
    """np.insert(np.delete(column, gone), at, values) (`gone` ascending, unique; `at`
    ascending, positions in the column without `gone`, as np.insert takes them), made as
    splice_in_place makes its column: in the column's buffer when it fits."""
    gone, at = np.asarray(gone, dtype=np.int64), np.asarray(at, dtype=np.int64)
    origin = at + np.searchsorted(gone - np.arange(len(gone)), at, side="right")
    cuts = sorted([(int(o), 0, k) for k, o in enumerate(origin.tolist())]
                  + [(int(g), 1, -1) for g in gone.tolist()])  # fmt: skip
    kept: list[tuple[int, int, int]] = []
    added: list[tuple[int, Array]] = []
    start = to = 0
    for where, removed, k in cuts:  # (an insertion point is never a removed entry)
        if where > start:
            kept.append((to, start, where))
            to, start = to + where - start, where
        if removed:
            start = where + 1
        else:
            added.append((to, values[k : k + 1]))
            to += 1
    if len(column) > start:
        kept.append((to, start, len(column)))
        to += len(column) - start
    return _placed(column, kept, added, to)


def _placed(
    column: Array,
    kept: list[tuple[int, int, int]],
    added: list[tuple[int, Array]],
    size: int,
    room: int = 0,
) -> Array:
    """The column of `size` entries whose runs column[start:end] go to `to` (`kept`) and whose
    new entries go to theirs (`added`): in the column's buffer when it fits (each run moved,
    in the order that reads every entry before it is written over), else in a new buffer with
    room."""
    buffer = _buffer(column)
    if size > len(buffer):  # a new buffer, grown by half at least (a first build's chunks
        # each outgrew the room and copied the column: the kernel's 177 copies, 2.5 CPU s)
        out = with_room(size, column.dtype, max(room, size // GROW_SHARE))
        for to, start, end in kept:
            out[to : to + end - start] = column[start:end]
    else:
        for to, start, end in kept:  # to the left: the leftmost first
            if to < start:
                _move(buffer, start, end, to)
        for to, start, end in reversed(kept):  # to the right: the rightmost first
            if to > start:
                _move(buffer, start, end, to)
        out = buffer[:size]
    for to, entries in added:
        out[to : to + len(entries)] = entries
    return out


def _buffer(column: Array) -> Array:
    """The array `column` is the start of (itself when it owns its entries)."""
    base = column.base
    if isinstance(base, np.ndarray) and base.ndim == 1 and base.dtype == column.dtype:
        if base.flags.owndata and base.ctypes.data == column.ctypes.data:
            return base
    return column


def _move(buffer: Array, start: int, end: int, to: int) -> None:
    """buffer[to : to + end - start] = buffer[start:end], MOVE_BLOCK entries at a time, in the
    order that reads every block before it is written over."""
    blocks = range(0, end - start, MOVE_BLOCK)
    for offset in blocks if to < start else reversed(blocks):
        size = min(MOVE_BLOCK, end - start - offset)
        buffer[to + offset : to + offset + size] = buffer[start + offset : start + offset + size]


@dataclass(slots=True)
class Runs:
    """The rows of three tables (definitions, references, the names' words) being spliced, as
    splice_offsets' `runs`, with their paths and where each old row went (`remap`: -1 until
    kept)."""

    remap: Array
    paths: list[str] = field(default_factory=list)
    d_runs: list[Any] = field(default_factory=list)
    r_runs: list[Any] = field(default_factory=list)
    w_runs: list[Any] = field(default_factory=list)

    def keep(self, old_paths: Sequence[str], a: int, b: int) -> None:
        """Old rows a..b-1, whole."""
        self.remap[a:b] = np.arange(len(self.paths), len(self.paths) + b - a)
        self.paths.extend(old_paths[a:b])
        for runs in (self.d_runs, self.r_runs, self.w_runs):
            runs.append((a, b))

    def add(self, path: str, *rows: tuple[Array, ...]) -> None:
        """A new row: its path and its entries' columns in each table (d, r, w)."""
        self.paths.append(path)
        for runs, row in zip((self.d_runs, self.r_runs, self.w_runs), rows, strict=True):
            runs.append(row)


def renumber_column(column: Array, renumber: Array) -> None:
    """column[i] = renumber[column[i]] where column[i] >= 0, in place, a block at a time."""
    for start in range(0, len(column), RENUMBER_BLOCK):
        part = column[start : start + RENUMBER_BLOCK]  # a view: assigned in place
        known = part >= 0
        part[known] = renumber[part[known]]


def found_at(column: Array, keys: Array) -> Array:
    """The positions (ascending) of the entries of `column` that are among `keys` (a few),
    looked up FIND_BLOCK entries at a time: beside the column, only a block's temporaries
    (np.isin sorts the whole column with the keys once they are more than about a hundred:
    over 100 MB for a change of a file defining a few hundred names among 2 million
    references, tests/unit/test_repomap_splice_memory.py)."""
    wanted = np.unique(np.asarray(keys, dtype=column.dtype))
    if not len(wanted) or not len(column):
        return np.zeros(0, dtype=np.int64)
    parts = []
    for start in range(0, len(column), FIND_BLOCK):
        part = column[start : start + FIND_BLOCK]
        at = np.searchsorted(wanted, part)
        np.minimum(at, len(wanted) - 1, out=at)
        parts.append(start + np.flatnonzero(wanted[at] == part))
    return np.concatenate(parts)


def groups_in_order(keys: Array, order: Array) -> Array:
    """Each entry's group (the index of its key among the distinct keys), for a column whose
    keys sorted are `keys` (`column[order]`): the distinct keys counted along `keys` a block at
    a time and put back in the column's order. The same column `group_of` finds with the sorted
    distinct keys, without a search of each key among them (issue 22: for the kernel's 2.9
    million definitions, a second of the first map's request)."""
    out = with_room(len(keys), np.int32)  # (a column of the table: spliced in place)
    last = -1  # the group of the entry before the block
    for start in range(0, len(keys), RENUMBER_BLOCK):
        end = min(start + RENUMBER_BLOCK, len(keys))
        step = np.empty(end - start, dtype=np.int32)  # 1 where a new key starts
        step[0] = 1 if start == 0 or keys[start] != keys[start - 1] else 0
        np.not_equal(keys[start + 1 : end], keys[start : end - 1], out=step[1:])
        np.cumsum(step, out=step)
        step += last
        out[order[start:end]] = step
        last = int(step[-1])
    return out


def group_of(groups: Array, keys: Array) -> Array:
    """Each key's group, -1 for a name nobody defines: looked up RENUMBER_BLOCK keys at a time
    into the int32 column, so beside it only a block's positions are held (issue 22: at once,
    the kernel's first map request held 21 bytes a reference and 12 a definition beside the
    columns, 16 MiB for 8,000 of its files)."""
    out = with_room(len(keys), np.int32)  # (a column of the table: spliced in place)
    for start in range(0, len(keys), RENUMBER_BLOCK):
        part = keys[start : start + RENUMBER_BLOCK]
        at: Array = np.searchsorted(groups, part)
        found: Array = at < len(groups)
        found[found] = groups[at[found]] == part[found]
        at[~found] = -1
        out[start : start + len(part)] = at
    return out


def rows_replaced(
    offsets: Array, columns: Sequence[Array], rows: Mapping[int, Sequence[Array]], room: int = 0
) -> tuple[Array, list[Array]]:
    """A table's offsets and columns once some of its rows (row -> its entries, a column
    each) are replaced, the other rows kept (splice_in_place: in each column's buffer when
    it fits, else in a new one with room for `room` more entries)."""
    if not rows:
        return offsets, list(columns)
    runs: list[Any] = []
    done = 0
    for row in sorted(rows):
        if row > done:
            runs.append((done, row))
        runs.append(tuple(rows[row]))
        done = row + 1
    if done < len(offsets) - 1:
        runs.append((done, len(offsets) - 1))
    spliced = [splice_in_place(offsets, c, runs, i, room) for i, c in enumerate(columns)]
    return splice_offsets(offsets, runs), spliced
