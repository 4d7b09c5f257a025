"""The repo map's tags of every file, packed into a few flat arrays (the kernel: 2.9 million
definitions and 2.2 million references, and who defines each of 2.2 million names, in 93 MiB,
where one object per definition took gigabytes).

A name is kept as its key: 62 bits of its BLAKE2b digest, bit 0 whether it starts with an
underscore (weighs a tenth), bit 1 whether it is a compound (core.repomap.edges). Keys are the
same in every process, so ties broken by key are too; two names sharing a key (about one pair in
a kernel's worth of names per 10^6 trees) would only merge their edges. A definition keeps its
key (once the groups below are made, its group, which names the key) and 0-based line, not its
text: the map's text is read from the file when it is shown.

Files are rows in path order. `TagTable.apply` splices the rows of changed files into the
arrays (within each column's buffer when it fits, never a rebuild of the other rows) and tells
what moved: which old row became which new one, and which names gained or lost a defining file. One file's packed
tags: core.repomap.packed; the splicing of flat columns: core.repomap.columns.

Every defined name is a group (the sorted keys of the defined names); each definition and each
reference carries its name's group (-1 for a reference to a name nobody defines), and the
files defining group g are `rows[starts[g]:starts[g+1]]` (ascending): a name's definers are
found by its group, and no key is kept twice. After a tracked change the definers are spliced
(the changed files' entries out, theirs in) and the groups renumbered (a gather), not sorted
or looked up again.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tokend.core.repomap.columns import (
    Array,
    Runs,
    edited_in_place,
    found_at,
    group_of,
    groups_in_order,
    renumber_column,
    rows_of,
    rows_replaced,
    splice_in_place,
    splice_offsets,
    with_room,
)
from tokend.core.repomap.definers import regroup_column, respliced_starts
from tokend.core.repomap.keys import name_key, sub_words, word_key
from tokend.core.repomap.packed import KEY, PackedTags

__all__ = ["name_key", "sub_words", "word_key"]  # (their home: core.repomap.keys)


@dataclass(slots=True)
class Applied:
    """What one `TagTable.apply` changed."""

    remap: Array  # old row -> new row, -1 for a removed file
    rows: list[int]  # the new rows of files added or changed
    names: Array  # keys whose set of defining files changed (uint64, unique)


class TagTable:
    """Definitions and references of every file (rows in path order) and, kept on demand,
    who defines each name: per group, its files' rows."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.d_off = np.zeros(1, dtype=np.int64)
        # None while the groups are kept: a definition's key is then groups[d_group]
        self.d_key: Array | None = np.zeros(0, dtype=KEY)
        self.d_line = np.zeros(0, dtype=np.int32)
        self.r_off = np.zeros(1, dtype=np.int64)
        self.r_key = np.zeros(0, dtype=KEY)
        self.r_count = np.zeros(0, dtype=np.int32)
        self.w_off = np.zeros(1, dtype=np.int64)  # the words of the names defined (packed.py)
        self.w_key, self.w_count = np.zeros(0, dtype=KEY), np.zeros(0, dtype=np.int32)
        self.d_group: Array = np.zeros(0, dtype=np.int32)  # None until groups() makes it
        self.r_group: Array = np.zeros(0, dtype=np.int32)
        # None until definers() makes them: the defined names' sorted keys, and per group the
        # start of its definers in `_rows` (one more than the groups)
        self._groups: Array | None = np.zeros(0, dtype=KEY)
        self._starts: Array | None = np.zeros(1, dtype=np.int32)
        self._rows: Array | None = np.zeros(0, dtype=np.int32)

    def groups(self) -> Array:
        """The defined names' keys, sorted: a name's group is its index here (the definition
        and reference columns `d_group`, `r_group` hold it)."""
        groups, _, _ = self.definers()
        if self.d_key is not None:  # (None: the group columns are made, and hold the keys)
            if self.d_group is None:  # (definers() makes it as it sorts the definitions)
                self.d_group = group_of(groups, self.d_key)  # (every one defined: none is -1)
            if self.r_group is None:  # (edges.derive_rows finds it as it derives every row)
                self.r_group = group_of(groups, self.r_key)
            self.d_key = None  # held by the groups from now on
        return groups

    def keys_at(self, start: int, end: int) -> Array:
        """The keys of the definitions start:end."""
        if self.d_key is not None:
            return self.d_key[start:end]
        return self.groups()[self.d_group[start:end]]

    def group_of(self, key: int) -> int | None:
        """The group of the name with `key`; None when no file defines it."""
        return _index_of(self.groups(), key)

    def row(self, path: str) -> int | None:
        i = bisect_left(self.paths, path)
        return i if i < len(self.paths) and self.paths[i] == path else None

    def definers(self) -> tuple[Array, Array, Array]:
        """(groups, starts, rows): the files defining group g (the name with key groups[g])
        are rows[starts[g]:starts[g+1]], ascending, each once."""
        if self._groups is None or self._starts is None or self._rows is None:
            assert self.d_key is not None  # (it goes only once the groups are made)
            keys, rows = self.d_key, rows_of(self.d_off)
            order = np.lexsort((rows, keys))
            keys, rows = keys[order], rows[order]
            if self.d_group is None:  # each definition's group, found from this order
                self.d_group = groups_in_order(keys, order)
            del order
            fresh = np.ones(len(keys), dtype=bool)
            fresh[1:] = (keys[1:] != keys[:-1]) | (rows[1:] != rows[:-1])
            keys = keys[fresh]  # (the definers, edited in place by a change: with room)
            rows = np.compress(fresh, rows, out=with_room(len(keys), rows.dtype))
            del fresh
            first = np.ones(len(keys), dtype=bool)
            first[1:] = keys[1:] != keys[:-1]
            self._groups = np.compress(first, keys, out=with_room(int(first.sum()), KEY))
            starts = with_room(int(first.sum()) + 1, np.int32)  # (edited in place: with room)
            starts[:-1], starts[-1] = np.flatnonzero(first), len(keys)
            self._starts = starts
            self._rows = rows
        return self._groups, self._starts, self._rows

    def definer_rows(self, key: int) -> Array:
        """The rows of the files defining the name with `key` (ascending)."""
        groups, starts, rows = self.definers()
        g = _index_of(groups, key)
        return rows[:0] if g is None else rows[starts[g] : starts[g + 1]]

    def set_words(self, rows: Mapping[int, tuple[Array, Array]], room: int = 0) -> None:
        """Some rows' names' words (row -> keys, counts) replaced (the words' pass: packed.py)."""
        columns = (self.w_key, self.w_count)
        self.w_off, (self.w_key, self.w_count) = rows_replaced(self.w_off, columns, rows, room)

    def apply(self, changed: Mapping[str, PackedTags | None], *, track: bool) -> Applied:
        """Replace (None: remove) the tags of some files. With `track`, the definers stay
        sorted by splicing (a few files) and `names` says whose definers changed; without,
        they are sorted again when next asked for (the first build, a checkout)."""
        old_paths, n_old = self.paths, len(self.paths)
        grouped = self.d_group is not None and self.r_group is not None
        carry = track and self._rows is not None and grouped
        if not carry and self.d_key is None:  # the groups go: the keys are a column again
            self.d_key = self.groups()[self.d_group]
        runs = Runs(np.full(n_old, -1, dtype=np.int64))
        dropped: list[int] = []  # old rows whose definitions leave
        added: list[tuple[int, Array]] = []  # (new row, its definitions' keys, unique: carried)
        added_all: list[tuple[int, Array]] = []  # (new row, its definitions' keys)
        names: list[Array] = []
        done = 0
        for path in sorted(changed):
            new = changed[path]
            i = bisect_left(old_paths, path)
            exists = i < n_old and old_paths[i] == path
            if new is None and not exists:
                continue
            if i > done:
                runs.keep(old_paths, done, i)
            old_keys = np.unique(self.keys_at(self.d_off[i], self.d_off[i + 1])) if exists else None
            if exists:
                dropped.append(i)
                done = i + 1
            else:
                done = i
            if new is not None:
                if exists:
                    runs.remap[i] = len(runs.paths)
                # (the keys made unique only for `_resplice`: the first build's 55,555 calls
                # made them for nothing, issue 22)
                added.append((len(runs.paths), np.unique(new.def_keys) if carry else _NO_KEYS))
                added_all.append((len(runs.paths), new.def_keys))
                runs.add(path, *_rows_of(new, carry))
            if track:
                before = old_keys if old_keys is not None else np.zeros(0, dtype=KEY)
                after = np.unique(new.def_keys) if new is not None else np.zeros(0, dtype=KEY)
                names.append(np.setxor1d(before, after, assume_unique=True))
        if done < n_old:
            runs.keep(old_paths, done, n_old)
        if not carry:  # the groups are made again when asked for: no column of them meanwhile
            self._groups = self._starts = self._rows = self.d_group = self.r_group = None
        self._splice(runs, carry)
        changed_names = np.unique(np.concatenate(names)) if names else np.zeros(0, dtype=KEY)
        if carry:
            self._regroup(*self._resplice(runs.remap, dropped, added))
            groups = self.groups()
            for row, keys in added_all:  # the new rows' definitions
                self.d_group[self.d_off[row] : self.d_off[row + 1]] = np.searchsorted(groups, keys)
        return Applied(runs.remap, [row for row, _ in added], changed_names)

    def _splice(self, runs: Runs, carry: bool) -> None:
        """Every column and the offsets of both tables spliced from `runs`; the paths too."""
        for prefix, table_runs in (("d", runs.d_runs), ("r", runs.r_runs), ("w", runs.w_runs)):
            offsets = getattr(self, f"{prefix}_off")
            grouped = carry and prefix != "w"
            kept = ("key", "line" if prefix == "d" else "count", "group" if grouped else "")
            for i, name in enumerate(kept):  # one column at a time (bounded memory)
                column = getattr(self, f"{prefix}_{name}", None) if name else None
                if column is None:  # no such column (the keys of definitions, held by groups)
                    continue
                setattr(self, f"{prefix}_{name}", splice_in_place(offsets, column, table_runs, i))
                del column
            setattr(self, f"{prefix}_off", splice_offsets(offsets, table_runs))
        self.paths = runs.paths

    def _resplice(
        self, remap: Array, dropped: list[int], added: list[tuple[int, Array]]
    ) -> tuple[Array, Array, Array]:
        """The definers without the dropped rows' entries, renumbered, with the added rows'
        entries put in their sorted places (no sort of the whole; the starts shifted in their
        own buffer, core.repomap.definers). Tells how the groups moved: the old groups no
        file defines any more, and the new names (keys) with where each went among the old."""
        groups, starts, rows = self.definers()
        self._groups = self._starts = self._rows = None  # edited in place where they fit
        gone = np.zeros(0, dtype=np.int64)  # entries of the dropped rows
        gone_groups = gone
        if dropped:
            gone = found_at(rows, np.array(dropped))
            gone_groups = np.searchsorted(starts, gone.astype(starts.dtype), side="right") - 1
            rows = edited_in_place(rows, gone, gone[:0], rows[:0])
        if not np.array_equal(remap, np.arange(len(remap))):
            renumber_column(rows, remap.astype(np.int32))  # (every row kept is >= 0)
        new_names, where = np.zeros(0, dtype=KEY), np.zeros(0, dtype=np.int64)
        new_counts, added_groups = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if added:
            new_keys = np.concatenate([k for _, k in added])
            new_rows = np.concatenate([np.full(len(k), r, dtype=np.int32) for r, k in added])
            order = np.lexsort((new_rows, new_keys))
            new_keys, new_rows = new_keys[order], new_rows[order]
            at_group = np.searchsorted(groups, new_keys)
            known = at_group < len(groups)
            known[known] = groups[at_group[known]] == new_keys[known]
            at = starts[at_group].astype(np.int64)  # a new name's entries go where its group
            at -= np.searchsorted(gone, at)  # will start; less what was dropped before
            for j in np.flatnonzero(known).tolist():
                end = int(starts[at_group[j] + 1])  # the group's end, less what was dropped
                run = rows[at[j] : end - int(np.searchsorted(gone, end))]
                at[j] += np.searchsorted(run, new_rows[j])
            by_place = np.argsort(at, kind="stable")  # (as np.insert takes them)
            rows = edited_in_place(rows, gone[:0], at[by_place], new_rows[by_place])
            added_groups = at_group[known]
            new_names, new_counts = np.unique(new_keys[~known], return_counts=True)
            where = np.searchsorted(groups, new_names)
        starts, vanished = respliced_starts(starts, gone_groups, added_groups, where, new_counts)
        inserted = where - np.searchsorted(vanished, where)
        self._groups = edited_in_place(groups, vanished, inserted, new_names)
        self._starts, self._rows = starts, rows
        return vanished, new_names, where

    def _regroup(self, vanished: Array, new_names: Array, where: Array) -> None:
        """Groups after a tracked change: every group column renumbered a block at a time (-1
        for a group `vanished`; the new names come in before the old groups at `where`),
        without a search of the groups; the new rows' entries and the references to the
        names defined now looked up (the new rows' definitions are the caller's)."""
        groups = self._groups
        assert groups is not None and self.d_group is not None and self.r_group is not None
        if len(vanished) or len(new_names):
            for column in (self.d_group, self.r_group):
                regroup_column(column, where, vanished)
        lookup = found_at(self.r_group, np.array([-2]))  # the new rows' entries
        if len(new_names):
            lookup = np.union1d(lookup, found_at(self.r_key, new_names))
        self.r_group[lookup] = group_of(groups, self.r_key[lookup])


def _index_of(groups: Array, key: int) -> int | None:
    """The index of `key` in the sorted `groups`; None when it is not there."""
    g = int(np.searchsorted(groups, np.array(key, dtype=KEY)))
    return g if g < len(groups) and groups[g] == key else None


def _rows_of(new: PackedTags, carry: bool) -> tuple[tuple[Array, ...], ...]:
    """A new row's entries in the definitions', the references' (with a group column to be
    looked up when the groups are carried) and the names' words' tables."""
    words = (new.word_keys, new.word_counts)
    if carry:
        return (
            (new.def_keys, new.def_lines, _unknown(len(new.def_keys))),
            (new.ref_keys, new.ref_counts, _unknown(len(new.ref_keys))),
            words,
        )
    return (new.def_keys, new.def_lines), (new.ref_keys, new.ref_counts), words


_NO_KEYS = np.zeros(0, dtype=KEY)  # a new row's unique keys, when the definers are sorted again


def _unknown(n: int) -> Array:  # the group column of a new row: to be looked up (-2)
    return np.full(n, -2, dtype=np.int32)
