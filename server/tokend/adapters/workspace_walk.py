"""Walking a workspace path one folder at a time from the root, each folder opened with
O_NOFOLLOW relative to the one before (`openat`), for adapters.workspace_fs (which says why):
`folder_walk` refuses any symlink on the way (writes, deletes); `resolve_open` expands one only
while its target stays inside the root (reads).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tokend.core.workspace.files import FolderMissing, PathConflict, PathOutside

MAX_SYMLINKS = 40  # as the kernel's own limit: more is a loop
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def parts_of(rel: str) -> list[str]:
    """The names of a normalized posix path relative to the root (nothing else is taken)."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise PathConflict(rel, "not a path inside the workspace")
    return parts


@dataclass
class Walk:
    """The open folders from the root down to a file's folder (closed together)."""

    fds: list[int]
    names: list[str]  # names[i] is the name of fds[i + 1] in fds[i]

    @property
    def folder(self) -> int:
        return self.fds[-1]

    def close(self) -> None:
        for fd in reversed(self.fds):
            os.close(fd)
        self.fds.clear()


def open_root(root: Path) -> int:
    """The workspace folder, opened (PathConflict when it cannot be)."""
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise PathConflict(".", f"the workspace folder cannot be opened ({exc.strerror})") from exc


def descend(walk: Walk, rel: str, name: str, create: bool) -> None:
    """Open folder `name` of the walk's last folder without following a symlink."""
    for attempt in (0, 1):
        try:
            walk.fds.append(os.open(name, _DIR_FLAGS, dir_fd=walk.folder))
            walk.names.append(name)
            return
        except FileNotFoundError:
            if not create or attempt:
                raise FolderMissing(rel, f"folder {name!r} does not exist") from None
            try:
                os.mkdir(name, 0o777, dir_fd=walk.folder)
            except FileExistsError:
                pass  # made meanwhile: open what is there (still without following)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                what = _kind_of(walk.folder, name)
                raise PathConflict(rel, f"{what} {name!r} is on its way") from None
            raise PathConflict(rel, f"folder {name!r} cannot be opened ({exc.strerror})") from exc


def _kind_of(folder: int, name: str) -> str:
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        return "something"
    return "a symlink" if stat.S_ISLNK(mode) else "a file, not a folder,"


@contextmanager
def folder_walk(root: Path, rel: str, create: bool = False) -> Iterator[tuple[Walk, str]]:
    """The open folders down to `rel`'s folder, none a symlink, and `rel`'s last name."""
    parts = parts_of(rel)
    walk = Walk([open_root(root)], [])
    try:
        for name in parts[:-1]:
            descend(walk, rel, name, create)
        yield walk, parts[-1]
    finally:
        walk.close()


def lstat_at(folder: int, name: str) -> os.stat_result | None:
    """The stat of `name` in `folder`, not following a symlink (None: absent)."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def resolve_open(root: Path, rel: str, follow_inside: bool) -> int:
    """`rel` opened read-only (its descriptor), a symlink on the way expanded when
    `follow_inside` and its target stays inside the root (see adapters.workspace_fs.open_file)."""
    pending = parts_of(rel)
    done: list[str] = []  # the real folders walked so far, from the root
    walk = Walk([open_root(root)], [])
    hops = 0
    try:
        while pending:
            name = pending.pop(0)
            last = not pending
            found = lstat_at(walk.folder, name)
            if found is None:
                if last:
                    raise FileNotFoundError(errno.ENOENT, "no such file", rel)
                raise FileNotFoundError(errno.ENOENT, f"folder {name!r} does not exist", rel)
            if stat.S_ISLNK(found.st_mode):
                if not follow_inside:
                    raise PathConflict(rel, f"a symlink {name!r} is on its way")
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise PathOutside(rel, "too many symlinks")
                target = os.readlink(name, dir_fd=walk.folder)
                base = _inside(root, done, target, rel)
                pending = base + pending
                walk.close()
                walk = Walk([open_root(root)], [])
                done = []
                continue
            if last:
                flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
                flags |= getattr(os, "O_NONBLOCK", 0)  # a FIFO must not hang the reader
                try:
                    return os.open(name, flags, dir_fd=walk.folder)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:  # swapped for a symlink just now
                        raise PathConflict(rel, f"{name!r} changed while it was opened") from exc
                    raise
            descend(walk, rel, name, create=False)
            done.append(name)
        raise PathConflict(rel, "not a file")
    finally:
        walk.close()


def _inside(root: Path, folder: list[str], target: str, rel: str) -> list[str]:
    """The components, from the root, of symlink `target` found in `folder`; PathOutside when
    it leaves the root."""
    if os.path.isabs(target):
        parts = None
        for base in (root, root.resolve()):
            try:
                parts = list(Path(os.path.normpath(target)).relative_to(base).parts)
                break
            except ValueError:
                continue
        if parts is None:
            raise PathOutside(rel, "a symlink on its way leads outside the workspace: not read")
        out: list[str] = []
        source = parts
    else:
        out, source = list(folder), list(PurePosixPath(target).parts)
    for part in source:
        if part in ("", "."):
            continue
        if part == "..":
            if not out:
                raise PathOutside(rel, "a symlink on its way leads outside the workspace: not read")
            out.pop()
        else:
            out.append(part)
    if not out:
        raise PathConflict(rel, "a symlink on its way names the workspace folder itself")
    return out
