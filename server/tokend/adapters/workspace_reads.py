"""Reading many files of a workspace in path order (a repo map's chunk of sources) through the
folders held open from one file to the next, for adapters.workspace_fs (`reader`).

`read_bytes` walks each path from the root, a folder at a time (adapters.workspace_walk): about
twenty system calls a file, most of them for the folders the file before had just walked
(issue 22: the kernel's first map read its 55,555 sources at 89 µs a file, 5.0 CPU s of the
daemon's build thread). A `Reader` keeps the folders of the last file read open (each opened
relative to the one before with O_NOFOLLOW, as the walk opens them) and walks only the part of
the next path that differs, then opens the file relative to its folder with O_NOFOLLOW.

Anything else, a symlink on the way or as the file's own name, a folder or file missing, not a
regular file, is read by `read_bytes` itself, whose answer or refusal (PathOutside for a link
out of the workspace) is the reader's: a symlink is never followed here. The folders are held
for one `reader` block (a chunk, a few hundred files); a folder renamed meanwhile is read where
it now is, as a walk under way reads it, and one swapped for a symlink is not followed.

A file is read into a buffer of its size (`read_rest`), not of a fixed megabyte: the daemon fixes
malloc's mmap threshold at 1 MiB (daemon.process), so each megabyte buffer was mapped, touched and
unmapped again for every file, and the end-of-file read mapped another (issue 22: 2.6 of the
build thread's CPU s for the kernel's 56,000 sources; 0.13 CPU s where 0.51 were for 11,072 of
them in process with the daemon's malloc settings).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tokend.adapters.workspace_walk import Walk, descend, open_root
from tokend.core.workspace.files import PathConflict

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS |= getattr(os, "O_NONBLOCK", 0)  # a FIFO must not hang the reader
ReadBytes = Callable[[Path, str], bytes]
READ_MORE_BYTES = 64 << 10  # a piece read past the size the file had when opened (under the
# daemon's 1 MiB mmap threshold: taken from malloc's heap, not mapped)


class Reader:
    """`read(rel)`: what `read_bytes(root, rel)` gives, through the folders held open."""

    def __init__(self, root: Path, read_bytes: ReadBytes) -> None:
        self.root = root
        self._read_bytes = read_bytes
        self._walk: Walk | None = None  # the last file's folders, from the root

    def close(self) -> None:
        if self._walk is not None:
            self._walk.close()
            self._walk = None

    def read(self, rel: str) -> bytes:
        parts = rel.split("/")
        if any(p in ("", ".", "..") or "\0" in p for p in parts):
            return self._read_bytes(self.root, rel)  # (its refusal)
        folder = self._folder(rel, parts[:-1])
        if folder is None:
            return self._read_bytes(self.root, rel)
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
        except OSError:  # a symlink (ELOOP), gone, not allowed: as read_bytes says
            return self._read_bytes(self.root, rel)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return self._read_bytes(self.root, rel)
            return read_rest(fd, st.st_size)
        finally:
            os.close(fd)

    def _folder(self, rel: str, names: list[str]) -> int | None:
        """The descriptor of `rel`'s folder (`names` from the root), opening only the folders
        the last file's path did not share; None when one cannot be opened so."""
        walk = self._walk
        if walk is None:
            try:
                walk = self._walk = Walk([open_root(self.root)], [])
            except PathConflict:
                return None
        same = 0
        for held, name in zip(walk.names, names, strict=False):
            if held != name:
                break
            same += 1
        while len(walk.names) > same:
            walk.names.pop()
            os.close(walk.fds.pop())
        try:
            for name in names[same:]:
                descend(walk, rel, name, create=False)
        except PathConflict:  # a symlink or a file on the way, a folder missing
            return None
        return walk.folder


def read_rest(fd: int, size: int, limit: int | None = None) -> bytes:
    """The bytes of `fd` from where it stands to its end (at most `limit`, when given): a first
    read of `size` + 1 bytes (the file's size when opened: that read finds its end too), then
    READ_MORE_BYTES at a time while it has more (it grew meanwhile, or is not a regular file)."""
    chunks, want, left = [], size + 1, limit
    while left is None or left > 0:
        chunk = os.read(fd, want if left is None else min(want, left))
        if not chunk:
            break
        chunks.append(chunk)
        want = READ_MORE_BYTES
        left = None if left is None else left - len(chunk)
    return b"".join(chunks)


@contextmanager
def reader(root: Path, read_bytes: ReadBytes) -> Iterator[Callable[[str], bytes]]:
    """A reader of `root`'s files (see the module), its folders closed at the block's end."""
    held = Reader(root, read_bytes)
    try:
        yield held.read
    finally:
        held.close()
