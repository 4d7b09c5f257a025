"""The repo map's tags of every file, packed into a few flat arrays (the kernel: 2.9 million
definitions and 2.2 million references in some 100 MB, where one object per definition took
gigabytes).

A name is kept as its key: 63 bits of its BLAKE2b digest, the lowest bit saying whether it
starts with an underscore (such names weigh a tenth). Keys are the same in every process, so
ties broken by key are too; two names sharing a key (about one pair in a kernel's worth of
names per 10^6 trees) would only merge their edges. A definition keeps its key and 0-based
line, not its text: the map's text is read from the file when it is shown.

Files are rows in path order. `TagTable.apply` splices the rows of changed files into the
arrays (a copy of the arrays, never a rebuild of the other rows) and tells what moved: which
old row became which new one, and which names gained or lost a defining file.

Every defined name is a group (the sorted keys of the definers); each definition and each
reference carries its name's group (-1 for a reference to a name nobody defines). After a
tracked change the groups are renumbered (a gather), not looked up again.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tokend.core.repomap_tags import FileTags

KEY = np.uint64
Array = Any  # a numpy array (numpy's own annotations would not add much here)


def name_key(name: str) -> int:
    """The key of an identifier (stable across processes; lowest bit: a leading underscore)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return (int.from_bytes(digest, "little") & ~1) | (1 if name.startswith("_") else 0)


@dataclass(frozen=True, slots=True)
class PackedTags:
    """One file's tags as arrays: definitions by (line, key), references by key."""

    def_keys: Array  # uint64
    def_lines: Array  # int32
    ref_keys: Array  # uint64, unique, ascending
    ref_counts: Array  # int32, occurrences of each

    @classmethod
    def of(cls, tags: FileTags) -> PackedTags:
        pairs = sorted({(d.line, name_key(d.name)) for d in tags.definitions})
        refs: dict[int, int] = {}
        for name, count in tags.references.items():
            key = name_key(name)
            refs[key] = refs.get(key, 0) + int(count)
        ordered = sorted(refs.items())
        return cls(
            np.array([k for _, k in pairs], dtype=KEY),
            np.array([li for li, _ in pairs], dtype=np.int32),
            np.array([k for k, _ in ordered], dtype=KEY),
            np.array([c for _, c in ordered], dtype=np.int32),
        )


def rows_of(offsets: Array) -> Array:
    """The row of every entry of a table whose rows start at `offsets` (length rows + 1)."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int32), np.diff(offsets))


def splice(offsets: Array, columns: Sequence[Array], runs: Sequence[Any]) -> tuple[Any, ...]:
    """A table of rows (entries of row i: offsets[i]:offsets[i+1] of each column) rebuilt from
    `runs`, in order: (a, b) takes old rows a..b-1 whole, a tuple of arrays is one new row."""
    return (
        splice_offsets(offsets, runs),
        *(splice_column(offsets, column, runs, i) for i, column in enumerate(columns)),
    )


def splice_offsets(offsets: Array, runs: Sequence[Any]) -> Array:
    """The row offsets of the table `splice` makes."""
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
    """Column `index` of the table `splice` makes (one column at a time: a caller replacing
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
class Applied:
    """What one `TagTable.apply` changed."""

    remap: Array  # old row -> new row, -1 for a removed file
    rows: list[int]  # the new rows of files added or changed
    names: Array  # keys whose set of defining files changed (uint64, unique)


class TagTable:
    """Definitions and references of every file (rows in path order) and, kept on demand,
    who defines each name: (key, row) pairs sorted by key then row."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.d_off = np.zeros(1, dtype=np.int64)
        self.d_key = np.zeros(0, dtype=KEY)
        self.d_line = np.zeros(0, dtype=np.int32)
        self.r_off = np.zeros(1, dtype=np.int64)
        self.r_key = np.zeros(0, dtype=KEY)
        self.r_count = np.zeros(0, dtype=np.int32)
        self.d_group: Array = np.zeros(0, dtype=np.int32)  # None until groups() makes it
        self.r_group: Array = np.zeros(0, dtype=np.int32)
        self._definers: tuple[Array, Array] | None = (self.d_key, np.zeros(0, dtype=np.int32))
        self._groups: Array | None = self.d_key  # sorted keys of the defined names

    def groups(self) -> Array:
        """The defined names' keys, sorted: a name's group is its index here (the definition
        and reference columns `d_group`, `r_group` hold it)."""
        if self._groups is None:
            keys, _ = self.definers()
            first = np.ones(len(keys), dtype=bool)
            first[1:] = keys[1:] != keys[:-1]
            self._groups = keys[first]
            self.d_group = np.searchsorted(self._groups, self.d_key).astype(np.int32)
            self.r_group = _group_of(self._groups, self.r_key)
        return self._groups

    def row(self, path: str) -> int | None:
        i = bisect_left(self.paths, path)
        return i if i < len(self.paths) and self.paths[i] == path else None

    def definers(self) -> tuple[Array, Array]:
        """(keys, rows): every (name, defining file) once, sorted by key then row."""
        if self._definers is None:
            keys, rows = self.d_key, rows_of(self.d_off)
            order = np.lexsort((rows, keys))
            keys, rows = keys[order], rows[order]
            fresh = np.ones(len(keys), dtype=bool)
            fresh[1:] = (keys[1:] != keys[:-1]) | (rows[1:] != rows[:-1])
            self._definers = (keys[fresh], rows[fresh])
        return self._definers

    def apply(self, changed: Mapping[str, PackedTags | None], *, track: bool) -> Applied:
        """Replace (None: remove) the tags of some files. With `track`, the definers stay
        sorted by splicing (a few files) and `names` says whose definers changed; without,
        they are sorted again when next asked for (the first build, a checkout)."""
        old_paths, n_old = self.paths, len(self.paths)
        carry = track and self._definers is not None and self._groups is not None
        remap = np.full(n_old, -1, dtype=np.int64)
        paths: list[str] = []
        d_runs: list[Any] = []
        r_runs: list[Any] = []
        dropped: list[int] = []  # old rows whose definitions leave
        added: list[tuple[int, Array]] = []  # (new row, its definitions' keys)
        names: list[Array] = []
        done = 0
        for path in sorted(changed):
            new = changed[path]
            i = bisect_left(old_paths, path)
            exists = i < n_old and old_paths[i] == path
            if new is None and not exists:
                continue
            if i > done:
                remap[done:i] = np.arange(len(paths), len(paths) + i - done)
                paths.extend(old_paths[done:i])
                d_runs.append((done, i))
                r_runs.append((done, i))
            old_keys = np.unique(self.d_key[self.d_off[i] : self.d_off[i + 1]]) if exists else None
            if exists:
                dropped.append(i)
                done = i + 1
            else:
                done = i
            if new is not None:
                if exists:
                    remap[i] = len(paths)
                new_keys = np.unique(new.def_keys)
                added.append((len(paths), new_keys))
                paths.append(path)
                if carry:
                    d_runs.append((new.def_keys, new.def_lines, _unknown(len(new.def_keys))))
                    r_runs.append((new.ref_keys, new.ref_counts, _unknown(len(new.ref_keys))))
                else:
                    d_runs.append((new.def_keys, new.def_lines))
                    r_runs.append((new.ref_keys, new.ref_counts))
            if track:
                before = old_keys if old_keys is not None else np.zeros(0, dtype=KEY)
                after = np.unique(new.def_keys) if new is not None else np.zeros(0, dtype=KEY)
                names.append(np.setxor1d(before, after, assume_unique=True))
        if done < n_old:
            remap[done:] = np.arange(len(paths), len(paths) + n_old - done)
            paths.extend(old_paths[done:])
            d_runs.append((done, n_old))
            r_runs.append((done, n_old))
        if not carry:  # the groups are made again when asked for: no column of them meanwhile
            self._definers = self._groups = self.d_group = self.r_group = None
        extra = ("group",) if carry else ()
        for prefix, runs in (("d", d_runs), ("r", r_runs)):
            offsets = getattr(self, f"{prefix}_off")
            kept = ("key", "line" if prefix == "d" else "count", *extra)
            for i, name in enumerate(kept):  # one column at a time (bounded memory)
                column = getattr(self, f"{prefix}_{name}")
                setattr(self, f"{prefix}_{name}", splice_column(offsets, column, runs, i))
                del column
            setattr(self, f"{prefix}_off", splice_offsets(offsets, runs))
        self.paths = paths
        changed_names = np.unique(np.concatenate(names)) if names else np.zeros(0, dtype=KEY)
        if carry and self._definers is not None and self._groups is not None:
            self._definers = _respliced(self._definers, remap, dropped, added)
            self._regroup(self._groups, changed_names)
        return Applied(remap, [row for row, _ in added], changed_names)

    def _regroup(self, old: Array, changed: Array) -> None:
        """Groups after a tracked change of the names `changed`: the new names inserted, the
        names no file defines any more removed, every group column renumbered by a gather;
        the new rows' and the newly defined names' entries looked up."""
        keys, _ = self.definers()
        defined = np.zeros(len(changed), dtype=bool)
        if len(keys):
            at = np.minimum(np.searchsorted(keys, changed), len(keys) - 1)
            defined = keys[at] == changed
        were = np.isin(changed, old, assume_unique=True)
        gone, new = changed[were & ~defined], changed[~were & defined]
        kept = np.delete(old, np.searchsorted(old, gone)) if len(gone) else old
        groups = np.insert(kept, np.searchsorted(kept, new), new) if len(new) else kept
        gone_at = np.searchsorted(old, gone)
        renumber = np.arange(len(old), dtype=np.int64)  # old group -> new group, -1: gone
        if len(gone):
            renumber -= np.searchsorted(gone_at, renumber)
        if len(new):
            renumber += np.searchsorted(new, old)
        renumber = renumber.astype(np.int32)
        renumber[gone_at] = -1
        for name in ("d_group", "r_group"):
            column = getattr(self, name)
            known = column >= 0
            column[known] = renumber[column[known]]
            setattr(self, name, column)
        self._groups = groups
        fresh = self.d_group < 0
        self.d_group[fresh] = np.searchsorted(groups, self.d_key[fresh])
        lookup = self.r_group == -2
        if len(new):
            lookup |= np.isin(self.r_key, new)
        self.r_group[lookup] = _group_of(groups, self.r_key[lookup])


def _unknown(n: int) -> Array:
    """The group column of a new row: to be looked up (-2)."""
    return np.full(n, -2, dtype=np.int32)


def _group_of(groups: Array, keys: Array) -> Array:
    """Each key's group, -1 for a name nobody defines."""
    at: Array = np.searchsorted(groups, keys)
    found: Array = at < len(groups)
    found[found] = groups[at[found]] == keys[found]
    return np.where(found, at, -1).astype(np.int32)


def _respliced(
    definers: tuple[Array, Array], remap: Array, dropped: list[int], added: list[tuple[int, Array]]
) -> tuple[Array, Array]:
    """The (key, row) pairs without the dropped rows' pairs, renumbered, with the added rows'
    pairs put in their sorted places (no sort of the whole)."""
    keys, rows = definers
    keep = ~np.isin(rows, np.array(dropped, dtype=np.int32)) if dropped else None
    if keep is not None:
        keys, rows = keys[keep], rows[keep]
    rows = remap[rows].astype(np.int32) if len(rows) else rows
    if not added:
        return keys, rows
    new_keys = np.concatenate([k for _, k in added])
    new_rows = np.concatenate([np.full(len(k), r, dtype=np.int32) for r, k in added])
    order = np.lexsort((new_rows, new_keys))
    new_keys, new_rows = new_keys[order], new_rows[order]
    low = np.searchsorted(keys, new_keys, side="left")
    high = np.searchsorted(keys, new_keys, side="right")
    at = np.array(
        [
            lo + np.searchsorted(rows[lo:hi], r)
            for lo, hi, r in zip(low, high, new_rows, strict=True)
        ],
        dtype=np.int64,
    )
    return np.insert(keys, at, new_keys), np.insert(rows, at, new_rows)
