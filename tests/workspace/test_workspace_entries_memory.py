"""What the file index keeps per file (issue 22: on the kernel's 78,300 files its tuples and their
integers took 13 MiB of the daemon's peak): most files are one integer of about 40 bytes, not a
tuple of five with three integers of their own (184 bytes). Counted by tracemalloc: bytes, not
time. Every entry reads back as it was given, also those that cannot be one integer."""

from __future__ import annotations

import random
import tracemalloc
from array import array
from collections.abc import Iterator

from tokend.core.types import ContentClass
from tokend.core.workspace.fileclass import FileEntry, estimate_file_tokens
from tokend.service.workspace.entries import Entries, pack, unpack

FILES = 20_000
CODE, PROSE = ContentClass.CODE, ContentClass.PROSE


def _kernel_like(count: int) -> Iterator[FileEntry]:
    """Files as a big tree's walk gives them (file_index._entry): sizes of a few KB, mtimes in
    nanoseconds of 2026, the fast estimate of their size; each figure a new integer, as
    os.stat's are."""
    rng = random.Random(22)
    sizes = array("q", (rng.randint(1_000, 400_000) for _ in range(count)))
    mtimes = array("q", (1_795_000_000_000_000_000 + rng.randint(0, 10**15) for _ in range(count)))
    for n in range(count):
        size = sizes[n]
        yield FileEntry(f"f{n}.c", size, mtimes[n], CODE, estimate_file_tokens(size, CODE))


def test_a_file_entry_is_kept_in_under_64_bytes() -> None:
    files = _kernel_like(FILES)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        packed = [pack(entry) for entry in files]  # each FileEntry dropped once packed
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(packed) == FILES
    # main: 192 bytes a file (a tuple of 5, 80 bytes; its size, mtime and estimate, 104; the
    # list's pointer, 8)
    assert held / FILES < 64, f"{held / FILES:.0f} bytes a file"


def test_every_entry_reads_back_as_it_was_given() -> None:
    given = [
        *_kernel_like(200),
        FileEntry("empty.c", 0, 1_795_000_000_000_000_000, CODE, 0),
        FileEntry("README", 5_000, 0, PROSE, estimate_file_tokens(5_000, PROSE)),
        FileEntry("big.bin", 3 << 40, 1, CODE, 0, "binary (a NUL byte): not counted"),
        FileEntry("old.c", 10, -5_000_000_000, CODE, 4),  # before 1970
        FileEntry("far.c", 10, (1 << 64) + 3, CODE, 4),  # past 64 bits
        FileEntry("odd.c", 10_000, 7, CODE, 1),  # an estimate not the size's
        FileEntry("huge.c", (1 << 50) + 1, 7, CODE, 0, "too large"),
    ]
    for entry in given:
        assert unpack(entry.path, pack(entry)) == entry
    table = Entries({entry.path: pack(entry) for entry in given})
    assert [table[path] for path in table] == given
