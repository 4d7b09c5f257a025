"""Touching a workspace's files without ever leaving it: every read, write, rename and delete
made on a client's behalf (a restore, a rewind, a file the session reads) goes through here.

A path is walked one component at a time from the workspace root, each folder opened with
O_NOFOLLOW relative to the one before (`openat`, adapters.workspace_walk), at the moment of the read or write; the file
is then read, created, renamed or unlinked relative to its folder's descriptor. So a folder
swapped for a symlink after tokend last looked (`mv d d.bak; ln -s ~/.ssh d`) is never followed:

- writes and deletes (`write_atomic`, `delete`, `remove_temporary`) refuse any symlink on the
  way, the file's own name included: `PathConflict`, which the caller reports to the user;
- reads (`read_bytes`, `stat`) expand a symlink only when its target, taken component by
  component the same way, stays inside the workspace; one that leaves it is `PathOutside`.

A new file is first written to `.NAME.tokend-restore` beside it, created 0600 with
O_CREAT|O_EXCL|O_NOFOLLOW, given its final mode with fchmod, then renamed over NAME: a reader
sees the old bytes or the new, and a killed process leaves at most the temporary copy (the
restore journal removes it at the next start). Durability: as the checkpoint index, which runs
with synchronous=NORMAL, this survives the process being killed, not the machine losing power
(an fsync per file made a 500-file restore about twice as slow, 1.4 of 3.1 s in a profile).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tokend.adapters import workspace_reads
from tokend.adapters.workspace_walk import Walk, folder_walk, lstat_at, resolve_open
from tokend.core.workspace.files import FolderMissing, OpenedFile, PathConflict

TEMP_SUFFIX = ".tokend-restore"


def temporary_name(name: str) -> str:
    """The name of the temporary copy of file `name` a write makes beside it."""
    return f".{name}{TEMP_SUFFIX}"


# -- writes -------------------------------------------------------------------------------


def write_atomic(root: Path, rel: str, data: bytes, mode: int) -> os.stat_result:
    """Replace (or create) file `rel` with `data` and permission bits `mode`, in one rename;
    missing folders are made. The new file's stat. PathConflict when a symlink (or a file where
    a folder is due) is on the way or `rel` itself is not a regular file."""
    with folder_walk(root, rel, create=True) as (walk, name):
        found = lstat_at(walk.folder, name)
        if found is not None and not stat.S_ISREG(found.st_mode):
            what = "a symlink" if stat.S_ISLNK(found.st_mode) else "not a regular file"
            raise PathConflict(rel, f"it is now {what}: not replaced")
        tmp = temporary_name(name)
        fd = _create_private(walk.folder, tmp, rel)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode & 0o777)
                done = os.fstat(fd)  # not fsynced: see the module's note on durability
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=walk.folder, dst_dir_fd=walk.folder)
        except BaseException:
            _unlink_quietly(walk.folder, tmp)
            raise
        return done


def _create_private(folder: int, tmp: str, rel: str) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for attempt in (0, 1):
        try:
            return os.open(tmp, flags, 0o600, dir_fd=folder)
        except FileExistsError:
            if attempt:
                break
            _unlink_quietly(folder, tmp)  # a copy an interrupted restore left (never followed)
    raise PathConflict(rel, f"its temporary copy {tmp!r} cannot be created")


def _unlink_quietly(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass


def delete(root: Path, rel: str, prune: bool = True) -> bool:
    """Delete file `rel` (False: it was not there), then, with `prune`, each folder it leaves
    empty up to the root. PathConflict when a symlink is on the way or `rel` is one."""
    try:
        with folder_walk(root, rel) as (walk, name):
            found = lstat_at(walk.folder, name)
            if found is None:
                return False
            if not stat.S_ISREG(found.st_mode):
                what = "a symlink" if stat.S_ISLNK(found.st_mode) else "not a regular file"
                raise PathConflict(rel, f"it is now {what}: not deleted")
            os.unlink(name, dir_fd=walk.folder)
            if prune:
                _prune_empty(walk)
            return True
    except FolderMissing:
        return False


def _prune_empty(walk: Walk) -> None:
    """Remove the walk's folders that are now empty, deepest first (never the root)."""
    while walk.names:
        name = walk.names.pop()
        os.close(walk.fds.pop())
        try:
            os.rmdir(name, dir_fd=walk.folder)
        except OSError:
            return


def probe(root: Path, rel: str) -> None:
    """PathConflict when a write or delete of `rel` would be refused now (a symlink on its way,
    or `rel` one); nothing is created or changed (a dry run asks this)."""
    try:
        with folder_walk(root, rel) as (walk, name):
            found = lstat_at(walk.folder, name)
            if found is not None and not stat.S_ISREG(found.st_mode):
                what = "a symlink" if stat.S_ISLNK(found.st_mode) else "not a regular file"
                raise PathConflict(rel, f"it is now {what}: not replaced")
    except FolderMissing:
        return  # a write makes the folders


def remove_temporary(root: Path, rel: str) -> bool:
    """Delete the temporary copy an interrupted write of `rel` may have left (True: one was)."""
    try:
        with folder_walk(root, rel) as (walk, name):
            tmp = temporary_name(name)
            found = lstat_at(walk.folder, tmp)
            if found is None or not stat.S_ISREG(found.st_mode):
                return False
            os.unlink(tmp, dir_fd=walk.folder)
            return True
    except PathConflict:
        return False


# -- reads --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Opened:
    """A file of the workspace, opened read-only: its descriptor and its stat."""

    fd: int
    st: os.stat_result


@contextmanager
def open_file(root: Path, rel: str, *, follow_inside: bool = True) -> Iterator[Opened]:
    """`rel` opened for reading, its path walked as above. A symlink is expanded (again
    without following) when `follow_inside` and it stays inside the root, else PathOutside
    (leaves it) or PathConflict (`follow_inside` False). FileNotFoundError when absent."""
    fd = resolve_open(root, rel, follow_inside)
    try:
        yield Opened(fd, os.fstat(fd))
    finally:
        os.close(fd)


def read_bytes(
    root: Path, rel: str, limit: int | None = None, *, follow_inside: bool = True
) -> bytes:
    """The bytes of file `rel` (at most `limit` + 1 of them, when given): see `open_file`."""
    with open_file(root, rel, follow_inside=follow_inside) as opened:
        if not stat.S_ISREG(opened.st.st_mode):
            raise PathConflict(rel, "not a regular file")
        return read_opened(opened, limit)


def reader(root: Path) -> AbstractContextManager[Callable[[str], bytes]]:
    """Many files of `root` read one after the other in path order, the folders held open from
    one to the next: each `read(rel)` is `read_bytes(root, rel)` (adapters.workspace_reads)."""
    return workspace_reads.reader(root, read_bytes)


def read_opened(opened: OpenedFile, limit: int | None = None) -> bytes:
    """The bytes of an opened file from where it stands (at most `limit` + 1, when given), read
    into a buffer of its size (workspace_reads.read_rest)."""
    left = limit + 1 if limit is not None else None
    return workspace_reads.read_rest(opened.fd, opened.st.st_size, left)


def stat_file(root: Path, rel: str, *, follow_inside: bool = True) -> os.stat_result | None:
    """The stat of `rel` (None: absent), resolved as `open_file` does."""
    try:
        with open_file(root, rel, follow_inside=follow_inside) as opened:
            return opened.st
    except FileNotFoundError:
        return None
