"""A change of one file splices its row into the repo map's tables within each column's own
buffer (core.repomap.columns.splice_in_place): no copy of a column is held beside it (issue 22:
on the kernel a one-file change held the references' keys, 40 MB, and the words' ids, 34 MB,
twice for a moment, the daemon's RSS peak). Counted by tracemalloc, which sees numpy's arrays:
bytes, not time. The columns are checked against the files' own arrays laid end to end."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np

from tokend.core.repomap.edges import Edges, derive_rows, replaced
from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.store import TagTable
from tokend.core.repomap.words import ID, WordTable

FILES = 100
DEFS, REFS = 200, 20_000  # a file's: 2,000,000 references in all (their keys: 16 MB)
WORDS = 40_000  # a file's: 4,000,000 words in all (their ids: 16 MB)


def _peak(work: Callable[[], object]) -> int:
    """Bytes allocated by `work` at its highest, beyond what was held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _file(rng: np.random.Generator, names: np.ndarray, refs: int) -> PackedTags:
    defs = np.sort(rng.choice(names, DEFS, replace=False))
    keys = np.unique(np.concatenate([rng.choice(names, refs // 2), rng.integers(
        0, 1 << 62, size=refs, dtype=np.uint64)]))[:refs].astype(KEY)  # fmt: skip
    return PackedTags(
        defs, np.arange(DEFS, dtype=np.int32), keys, rng.integers(1, 9, len(keys), dtype=np.int32)
    )


def _laid_end_to_end(table: TagTable, files: dict[str, PackedTags]) -> None:
    """The table's columns are the files' arrays in path order; each reference's group names
    its key where a file defines it."""
    order = sorted(files)
    assert table.paths == order
    r_keys = np.concatenate([files[p].ref_keys for p in order])
    assert np.array_equal(table.r_key, r_keys)
    assert np.array_equal(table.r_count, np.concatenate([files[p].ref_counts for p in order]))
    d_keys = np.concatenate([files[p].def_keys for p in order])
    assert np.array_equal(table.keys_at(0, len(d_keys)), d_keys)
    assert np.array_equal(table.d_line, np.concatenate([files[p].def_lines for p in order]))
    assert np.array_equal(np.diff(table.r_off), [len(files[p].ref_keys) for p in order])
    groups = table.groups()
    defined = np.isin(r_keys, d_keys)
    assert np.array_equal(table.r_group >= 0, defined)
    assert np.array_equal(groups[table.r_group[defined]], r_keys[defined])


def test_a_one_file_change_is_spliced_without_a_second_copy_of_the_references() -> None:
    rng = np.random.default_rng(22)
    names = np.unique(rng.integers(0, 1 << 62, size=50_000, dtype=np.uint64)).astype(KEY)
    files = {f"f{i:03}.c": _file(rng, names, REFS) for i in range(FILES)}
    table = TagTable()
    table.apply(files, track=False)
    table.groups()  # what the first map request makes: the changes below carry the groups
    keys_bytes = table.r_key.nbytes
    for path, refs in (("f040.c", REFS + 700), ("f007.c", REFS - 900), ("f099.c", REFS + 50)):
        files[path] = _file(rng, names, refs)  # grows, shrinks, grows at the end
        peak = _peak(lambda p=path: table.apply({p: files[p]}, track=True))
        # main copied each column beside its old one: the keys' 16 MB at least
        assert peak < keys_bytes / 4, (path, peak, keys_bytes)
        _laid_end_to_end(table, files)


def test_a_change_that_outgrows_the_room_is_copied_with_room_again() -> None:
    rng = np.random.default_rng(7)
    names = np.unique(rng.integers(0, 1 << 62, size=5_000, dtype=np.uint64)).astype(KEY)
    files = {f"f{i:02}.c": _file(rng, names, 2_000) for i in range(20)}
    table = TagTable()
    table.apply(files, track=False)
    table.groups()
    for refs in (2_000 + 100_000, 500, 40_000):  # past the buffer's room, then back
        files["f10.c"] = _file(rng, names, refs)
        table.apply({"f10.c": files["f10.c"]}, track=True)
        _laid_end_to_end(table, files)
    files["f10b.c"] = _file(rng, names, 3_000)  # a new file, then one gone
    table.apply({"f10b.c": files["f10b.c"]}, track=True)
    del files["f03.c"]
    table.apply({"f03.c": None}, track=True)
    _laid_end_to_end(table, files)


def test_a_one_file_change_of_words_is_spliced_without_a_second_copy_of_the_ids() -> None:
    rng = np.random.default_rng(24)
    words = {
        row: (np.sort(rng.choice(1 << 31, WORDS, replace=False)).astype(ID),
              rng.integers(1, 255, WORDS, dtype=np.uint8))
        for row in range(FILES)
    }  # fmt: skip
    table = WordTable()
    table.apply(None, words, FILES)
    ids_bytes = table.ids.nbytes
    for row, size in ((40, WORDS + 300), (7, WORDS - 2_000), (99, WORDS + 10)):
        words[row] = (np.sort(rng.choice(1 << 31, size, replace=False)).astype(ID),
                      rng.integers(1, 255, size, dtype=np.uint8))  # fmt: skip
        peak = _peak(lambda r=row: table.apply(None, {r: words[r]}, FILES))
        assert peak < ids_bytes / 8, (row, peak, ids_bytes)  # main: the ids' 16 MB at least
        assert np.array_equal(table.ids, np.concatenate([words[r][0] for r in range(FILES)]))
        assert np.array_equal(table.counts, np.concatenate([words[r][1] for r in range(FILES)]))
        assert np.array_equal(np.diff(table.offsets), [len(words[r][0]) for r in range(FILES)])


def test_a_changed_files_edges_are_spliced_without_a_second_copy_of_the_graph() -> None:
    """The map after a change derives the changed file's row of the file graph again and
    splices it into the graph's columns (core.repomap.edges.replaced): main copied them, 12
    bytes an edge. The spliced graph is the graph derived whole from the changed table."""
    rng = np.random.default_rng(18)
    files, count = {}, 20_000  # each defining 5 names, referring to 100 of the others'
    names = np.unique(rng.integers(0, 1 << 62, size=6 * count, dtype=np.uint64))[: 5 * count]
    names = rng.permutation(names.astype(KEY))
    for i in range(count):
        refs = np.unique(rng.choice(names, 100))
        files[f"d{i // 1000:02}/f{i:05}.c"] = PackedTags(
            np.sort(names[5 * i : 5 * i + 5]), np.arange(5, dtype=np.int32), refs,
            np.ones(len(refs), dtype=np.int32),
        )  # fmt: skip
    table = TagTable()
    table.apply(files, track=False)
    edges = derive_rows(table, np.arange(count))
    graph_bytes = edges.targets.nbytes + edges.weights.nbytes
    path = "d07/f07000.c"
    refs = np.unique(rng.choice(names, 400))  # its row grows fourfold
    files[path] = PackedTags(files[path].def_keys, files[path].def_lines, refs,
                             np.ones(len(refs), dtype=np.int32))  # fmt: skip
    table.apply({path: files[path]}, track=True)
    row = np.array([table.row(path)])
    fresh = derive_rows(table, row)
    spliced: list[Edges] = []
    peak = _peak(lambda: spliced.append(replaced(edges, row, fresh)))
    assert peak < graph_bytes / 8, (peak, graph_bytes)  # main: the graph's columns again
    whole = derive_rows(table, np.arange(count))
    for column in ("offsets", "targets", "weights", "totals"):
        assert np.array_equal(getattr(spliced[0], column), getattr(whole, column)), column


def test_a_one_file_change_edits_who_defines_each_name_in_place() -> None:
    """Two million names, each defined once: a change of one file's definitions (a name gone,
    a new one) edits the definers' columns (per name: its key, its files) within their buffers
    and renumbers the groups with one column of them (main: 35 bytes a name beside the table,
    its copies of the keys, counts and renumbering). The definers are checked against the files
    that define each name."""
    rng = np.random.default_rng(3)
    count, defs = 100, 20_000
    names = np.unique(rng.integers(0, 1 << 62, size=count * defs + 1000, dtype=np.uint64))
    names = rng.permutation(names[: count * defs].astype(KEY))
    files = {}
    for i in range(count):
        refs = np.unique(rng.choice(names, 500))
        files[f"f{i:03}.c"] = PackedTags(
            np.sort(names[i * defs : (i + 1) * defs]), np.arange(defs, dtype=np.int32), refs,
            np.ones(len(refs), dtype=np.int32),
        )  # fmt: skip
    table = TagTable()
    table.apply(files, track=False)
    groups = len(table.groups())
    for n, path in enumerate(("f040.c", "f041.c", "f099.c")):
        old = files[path]
        keys = np.sort(np.append(old.def_keys[1:], KEY(12345 + n)).astype(KEY))
        files[path] = PackedTags(keys, old.def_lines, old.ref_keys, old.ref_counts)
        peak = _peak(lambda p=path: table.apply({p: files[p]}, track=True))
        assert peak < 16 * groups, (path, peak, groups)  # main: 35 bytes a name
        assert len(table.definer_rows(int(old.def_keys[0]))) == 0  # its name gone
        assert table.paths[int(table.definer_rows(12345 + n)[0])] == path
    _laid_end_to_end(table, files)
    for path in ("f000.c", "f040.c", "f099.c"):
        for key in files[path].def_keys[::997].tolist():
            assert [table.paths[r] for r in table.definer_rows(key)] == [path]
