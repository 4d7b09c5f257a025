"""A first build hands the graph its files a chunk at a time (the kernel: 177 chunks of up to 500
files); what each chunk cost must not grow with the files before it (issue 22, branch first24).
Main: every chunk outgrew its columns' room (1/256) and copied each column whole into a new
buffer, and the import links looked at every path of the graph for Go packages (2.5 and 1.6 s
of the build thread on the kernel, under cProfile)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tokend.core.repomap.columns import _buffer
from tokend.core.repomap.links import ImportLinks
from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.store import TagTable

CHUNKS = 100


def test_a_first_build_copies_each_column_a_few_times() -> None:
    rng = np.random.default_rng(24)
    table = TagTable()
    buffers: set[int] = set()
    wanted = []
    for n in range(CHUNKS):  # a chunk: one file of 10,000 references (more than the room)
        refs = np.unique(rng.integers(0, 1 << 62, size=10_000, dtype=np.uint64)).astype(KEY)
        defs = refs[:50].copy()
        counts = np.full(len(refs), n, dtype=np.int32)
        table.apply({f"f{n:03}.c": PackedTags(defs, np.arange(50, dtype=np.int32), refs, counts)},
                    track=False)  # fmt: skip
        buffers.add(_buffer(table.r_key).ctypes.data)
        wanted.append(refs)
    assert len(buffers) <= 16  # main: 100, a copy each chunk
    assert np.array_equal(table.r_key, np.concatenate(wanted))  # the same table
    sizes = [len(r) for r in wanted]
    assert np.array_equal(table.r_count, np.repeat(np.arange(CHUNKS, dtype=np.int32), sizes))
    assert table.r_off.tolist() == np.concatenate([[0], np.cumsum(sizes)]).tolist()


class _Unread(list[str]):
    """The graph's paths, which must not be gone through."""

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("every path of the graph was looked at")


def test_new_files_without_go_look_at_no_other_path() -> None:
    links = ImportLinks()
    after = _Unread(f"src/f{i:05}.c" for i in range(1000))
    stale = links.changed({"src/f00001.c": ("stdio.h",)}, [], after)  # main: AssertionError
    assert stale == set() and links.imports == {"src/f00001.c": ("stdio.h",)}


def test_a_go_file_that_came_still_makes_its_package_stale() -> None:
    links = ImportLinks()
    links.changed({"pkg/a.go": (), "pkg/b.go": (), "other/c.go": ()}, [], [])
    after = ["other/c.go", "pkg/a.go", "pkg/b.go", "pkg/new.go"]
    stale = links.changed({"pkg/new.go": ()}, ["other/c.go", "pkg/a.go", "pkg/b.go"], after)
    assert stale == {"pkg/a.go", "pkg/b.go"}
