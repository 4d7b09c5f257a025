"""A workspace index's files, kept as plain tuples the garbage collector does not walk.

A FileEntry is an object the cyclic collector tracks: a 100,000-file workspace held 100,000
of them for its life, and every full pass of the collector walked them all while holding the
interpreter (107 ms on a loaded 2-core machine; a pass of the middle generation, which the
entries went through on their way to the oldest, held every connection of the daemon 416 ms:
issue 22's scale_tree). A tuple of strings and integers is untracked by the collector's next
pass over it, so the index keeps (size, mtime_ns, content class, estimate, skipped) per path and
makes a FileEntry when one is read.

Most files are one integer, not a tuple (`pack`): their size, mtime and content class in its
bits, their estimate made again from the size when read (issue 22: on the kernel's 78,300 files
the tuples and their integers took 13 MiB, 184 bytes a file; one integer takes 40). A file whose
figures do not fit that (skipped, a negative mtime, an estimate not the size's) keeps the tuple.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping

from tokend.core.types import ContentClass
from tokend.core.workspace.fileclass import FileEntry, estimate_file_tokens

Packed = (
    int | tuple[int, int, int, int, str | None]
)  # bits, or (size, mtime_ns, class (its place), estimate, skipped)
_CLASSES = tuple(ContentClass)
_PLACE = {klass: place for place, klass in enumerate(_CLASSES)}
_CLASS_BITS = 3  # the class's place, in the lowest bits
_MTIME_BITS = 64  # then mtime_ns; the size above them
assert len(_CLASSES) <= 1 << _CLASS_BITS


def pack(entry: FileEntry) -> Packed:
    """`entry` without its path: one integer when its figures allow (the module says which)."""
    size, mtime_ns, place = entry.size_bytes, entry.mtime_ns, _PLACE[entry.content_class]
    if (
        entry.skipped is None
        and size >= 0
        and 0 <= mtime_ns < 1 << _MTIME_BITS
        and entry.estimate_tokens == estimate_file_tokens(size, entry.content_class)
    ):
        return (((size << _MTIME_BITS) | mtime_ns) << _CLASS_BITS) | place
    return (size, mtime_ns, place, entry.estimate_tokens, entry.skipped)


def unpack(path: str, packed: Packed) -> FileEntry:
    if isinstance(packed, int):
        klass = _CLASSES[packed & ((1 << _CLASS_BITS) - 1)]
        rest = packed >> _CLASS_BITS
        size = rest >> _MTIME_BITS
        mtime_ns = rest & ((1 << _MTIME_BITS) - 1)
        return FileEntry(path, size, mtime_ns, klass, estimate_file_tokens(size, klass))
    size, mtime_ns, place, estimate, skipped = packed
    return FileEntry(path, size, mtime_ns, _CLASSES[place], estimate, skipped)


class Entries(Mapping[str, FileEntry]):
    """path -> FileEntry over packed entries (a copy the caller owns: the index's own table
    changes under its lock, this one never)."""

    __slots__ = ("_packed",)

    def __init__(self, packed: dict[str, Packed] | None = None) -> None:
        self._packed: dict[str, Packed] = {} if packed is None else packed

    def __getitem__(self, path: str) -> FileEntry:
        return unpack(path, self._packed[path])

    def __contains__(self, path: object) -> bool:
        return path in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)


class Under:
    """The paths of an index's entries under a prefix, found by bisection (a batch naming
    many folders does not scan every entry for each; sorted once, when first asked)."""

    def __init__(self, known: Mapping[str, object]) -> None:
        self._known = known
        self._sorted: list[str] | None = None

    def paths(self, prefix: str) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._known)
        start = bisect_left(self._sorted, prefix)
        end = bisect_left(self._sorted, prefix + "\U0010ffff")
        return self._sorted[start:end]

    def any(self, prefix: str) -> bool:
        return bool(self.paths(prefix))
