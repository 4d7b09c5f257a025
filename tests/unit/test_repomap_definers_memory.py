"""A tracked change of one file edits who defines each name (core.repomap.store TagTable.apply,
core.repomap.definers) without a column as long as the groups beside them: the starts shifted in
their own buffer, the group columns renumbered a block at a time (issue 22: on the kernel's 2.2
million groups main held a count per group, the starts cast to int64 by a search and a
renumbering column, 26-28 MiB above the tables, the top temporary of a change). Counted by
tracemalloc, which sees numpy's arrays: bytes, not time. The definers and the group columns are
checked against a plain reference: per name, the sorted rows of the files that define it."""

from __future__ import annotations

import tracemalloc

import numpy as np

from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.store import TagTable


def _file(defs: np.ndarray, refs: np.ndarray) -> PackedTags:
    defs, refs = np.sort(defs).astype(KEY), np.unique(refs).astype(KEY)
    lines, counts = np.arange(len(defs), dtype=np.int32), np.ones(len(refs), dtype=np.int32)
    return PackedTags(defs, lines, refs, counts)


def _reference(files: dict[str, PackedTags]) -> dict[int, list[int]]:
    """Per defined key, the rows (path order) of the files defining it: plain Python."""
    out: dict[int, list[int]] = {}
    for row, path in enumerate(sorted(files)):
        for key in sorted(set(files[path].def_keys.tolist())):
            out.setdefault(key, []).append(row)
    return out


def _check(table: TagTable, files: dict[str, PackedTags]) -> None:
    want = _reference(files)
    groups, starts, rows = table.definers()
    assert groups.tolist() == sorted(want)
    assert len(starts) == len(groups) + 1
    for g, key in enumerate(groups.tolist()):
        assert rows[starts[g] : starts[g + 1]].tolist() == want[key], key
    order = sorted(files)
    d_keys = [k for p in order for k in files[p].def_keys.tolist()]
    assert groups[table.d_group].tolist() == d_keys
    r_keys = [k for p in order for k in files[p].ref_keys.tolist()]
    assert [groups[g] if g >= 0 else None for g in table.r_group.tolist()] == [
        k if k in want else None for k in r_keys
    ]


def test_changes_keep_the_definers_of_every_name() -> None:
    rng = np.random.default_rng(8)
    names = np.unique(rng.integers(0, 1 << 62, size=400, dtype=np.uint64)).astype(KEY)
    files = {f"f{i:02}.c": _file(rng.choice(names, 12), rng.choice(names, 30)) for i in range(30)}
    table = TagTable()
    table.apply(files, track=False)
    table.groups()  # what the first map request makes: the changes below carry the groups
    for step in range(60):
        path = f"f{rng.integers(0, 40):02}.c"
        if step % 7 == 3 and path in files:  # a file removed
            del files[path]
            table.apply({path: None}, track=True)
        else:  # changed or added: old names and names nobody defined yet
            fresh = rng.integers(0, 1 << 62, size=int(rng.integers(0, 4)), dtype=np.uint64)
            defs = np.concatenate([rng.choice(names, int(rng.integers(0, 15))), fresh])
            files[path] = _file(defs, np.concatenate([rng.choice(names, 30), fresh]))
            table.apply({path: files[path]}, track=True)
        _check(table, files)


def test_a_change_holds_no_column_as_long_as_the_groups() -> None:
    rng = np.random.default_rng(22)
    count, defs = 4_000, 250  # 1,000,000 names, each defined once
    names = np.unique(rng.integers(0, 1 << 62, size=count * defs, dtype=np.uint64)).astype(KEY)
    rng.shuffle(names)
    files = {
        f"f{i:05}.c": _file(names[i * defs : (i + 1) * defs], rng.choice(names, 400))
        for i in range(count)
    }
    table = TagTable()
    table.apply(files, track=False)
    table.groups()
    starts_bytes = table.definers()[1].nbytes
    for path in ("f00100.c", "f03000.c"):  # 6 names vanish, 8 come in (the groups move)
        fresh = rng.integers(0, 1 << 62, size=8, dtype=np.uint64)
        files[path] = _file(np.concatenate([files[path].def_keys[6:], fresh]), files[path].ref_keys)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            table.apply({path: files[path]}, track=True)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        # main: a count per group, the starts as int64 and new starts side by side (12.2 MB
        # here, 3 x the starts), then a renumbering column as long; now 2.6 MB (blocks)
        assert peak < starts_bytes, (peak, starts_bytes)
    groups, starts, rows = table.definers()
    want = _reference(files)
    assert groups.tolist() == sorted(want)
    assert np.array_equal(np.diff(starts), [len(want[k]) for k in groups.tolist()])
    assert rows.tolist() == [row for k in groups.tolist() for row in want[k]]
