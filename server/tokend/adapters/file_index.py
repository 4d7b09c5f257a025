"""Reading a workspace folder from disk: the walk that honours ignore files, one file's entry,
and a file's text, each refusing what core.workspace.fileclass's rules refuse.

Nothing here raises for one bad file: it becomes an entry with a `skipped` reason. Paths given
by clients go through `resolve_inside`, which refuses what would leave the root (`..`, absolute
paths elsewhere, symlinks whose target is outside).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from tokend.adapters import workspace_fs
from tokend.adapters.ignore_rules import IgnoreRules, is_ignored
from tokend.core.errors import InvalidParams
from tokend.core.workspace.fileclass import (
    BINARY_REASON,
    BINARY_SNIFF_BYTES,
    DEFAULT_MAX_FILE_BYTES,
    FileEntry,
    FileRead,
    content_class_of,
    decode_text,
    estimate_file_tokens,
    is_binary,
    too_large_reason,
)
from tokend.core.workspace.files import PathConflict, PathOutside
from tokend.core.workspace.own_paths import OwnPaths

OUTSIDE_REASON = "a symlink to outside the workspace: not read"  # also one swapped in later


def resolve_inside(root: Path, path: str) -> str:
    """The posix path relative to `root` of a client's `path` (relative to the root, or
    absolute, or a file:// URI). Raises InvalidParams when it leaves the root, lexically or
    through a symlink."""
    if path.startswith("file://"):
        from urllib.parse import unquote, urlparse

        path = unquote(urlparse(path).path)
    candidate = Path(path) if os.path.isabs(path) else root / path
    lexical = Path(os.path.normpath(candidate))
    real_root = root.resolve()
    try:
        rel = lexical.relative_to(root)
    except ValueError:
        try:
            rel = lexical.relative_to(real_root)
        except ValueError:
            raise InvalidParams(f"{path!r} is outside the workspace {root}") from None
    if rel == Path(".") or str(rel).startswith(".."):
        raise InvalidParams(f"{path!r} is outside the workspace {root}")
    try:
        (real_root / rel).resolve().relative_to(real_root)
    except ValueError:
        raise InvalidParams(
            f"{path!r} resolves (through a symlink) outside the workspace"
        ) from None
    return PurePosixPath(*rel.parts).as_posix()


def file_entry(root: Path, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileEntry | None:
    """The entry of one file a client named, None when it is not a regular file (gone, a
    folder). Its path is walked as workspace_fs walks it: a symlink that now leads outside the
    workspace is an entry with OUTSIDE_REASON, never followed."""
    klass = content_class_of(rel)
    try:
        with workspace_fs.open_file(root, rel) as opened:
            st = opened.st
            if not stat.S_ISREG(st.st_mode):
                return None
            if st.st_size > max_bytes:
                reason = too_large_reason(st.st_size, max_bytes)
                return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, 0, reason)
            head = os.read(opened.fd, BINARY_SNIFF_BYTES)
    except PathOutside:
        return FileEntry(rel, 0, 0, klass, 0, OUTSIDE_REASON)
    except (OSError, PathConflict):
        return None
    if is_binary(head):
        return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, 0, BINARY_REASON)
    return FileEntry(
        rel, st.st_size, st.st_mtime_ns, klass, estimate_file_tokens(st.st_size, klass)
    )


def _entry(
    root: Path, full: str, rel: str, st: os.stat_result, is_link: bool, max_bytes: int
) -> FileEntry | None:
    """The entry of `rel` whose (followed) stat is `st`; reads at most its first bytes."""
    if not stat.S_ISREG(st.st_mode):
        return None
    klass = content_class_of(rel)
    if is_link:
        try:
            Path(full).resolve().relative_to(root.resolve())
        except ValueError:
            return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, 0, OUTSIDE_REASON)
    if st.st_size > max_bytes:
        reason = too_large_reason(st.st_size, max_bytes)
        return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, 0, reason)
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            head = os.read(fd, BINARY_SNIFF_BYTES)
        finally:
            os.close(fd)
    except OSError as exc:
        return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, 0, f"unreadable: {exc.strerror}")
    if is_binary(head):
        return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, 0, BINARY_REASON)
    estimate = estimate_file_tokens(st.st_size, klass)
    return FileEntry(rel, st.st_size, st.st_mtime_ns, klass, estimate)


def read_file(root: Path, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileRead:
    """The text of a workspace file under the rules of core.workspace.fileclass, read through
    workspace_fs at this moment: a path that now leads outside the workspace (a folder swapped
    for a symlink since it was checked) is OUTSIDE_REASON, not read."""
    try:
        with workspace_fs.open_file(root, rel) as opened:
            if not stat.S_ISREG(opened.st.st_mode):
                return FileRead(b"", None, "not a regular file")
            size = opened.st.st_size
            data = workspace_fs.read_opened(opened, max_bytes)
    except PathOutside:
        return FileRead(b"", None, OUTSIDE_REASON)
    except PathConflict as exc:
        return FileRead(b"", None, f"unreadable: {exc.reason}")
    except OSError as exc:
        return FileRead(b"", None, f"unreadable: {exc.strerror or exc}")
    if len(data) > max_bytes:
        return FileRead(b"", None, too_large_reason(max(size, len(data)), max_bytes))
    if is_binary(data):
        return FileRead(data, None, BINARY_REASON)
    return FileRead(data, decode_text(data), None)


def walk(
    root: Path,
    rules: IgnoreRules,
    *,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    progress: Callable[[int], None] | None = None,
    start: str = "",
) -> Iterator[FileEntry]:
    """Every file of the tree (or of its folder `start`) that the ignore files keep, in path
    order (the order of the paths' strings: a subfolder's files come where its name and a "/"
    fall among the folder's names), so the first build can tag the files as they are found
    (issue 22); nothing of tokend's own folders (`rules.own`). Folders are not followed through
    symlinks; a folder that cannot be listed is skipped."""
    if start and rules.own.owns(start):
        return
    stack = [_in_path_order(root, rules, start, max_bytes)]
    seen = 0
    while stack:
        found = next(stack[-1], None)
        if found is None:
            stack.pop()
        elif isinstance(found, str):  # a subfolder: its files before the names after it
            stack.append(_in_path_order(root, rules, found, max_bytes))
        else:
            yield found
            seen += 1
            if progress is not None and seen % 500 == 0:
                progress(seen)


def _in_path_order(
    root: Path, rules: IgnoreRules, folder: str, max_bytes: int
) -> Iterator[FileEntry | str]:
    """A folder's files (entries) and subfolders (paths) in the order of their paths: a
    subfolder sorts as its name followed by "/" (a file's name holds no "/", so this is the
    order of every path below it against the folder's other names)."""
    files, subfolders = list_folder(root, rules, folder, max_bytes=max_bytes)
    cut = len(folder) + 1 if folder else 0
    keyed: list[tuple[str, FileEntry | str]] = [(f.path[cut:], f) for f in files]
    keyed += [(sub[cut:] + "/", sub) for sub in subfolders]
    keyed.sort(key=lambda pair: pair[0])
    return iter([item for _, item in keyed])


def list_folder(
    root: Path, rules: IgnoreRules, folder: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[list[FileEntry], list[str]]:
    """The files directly in `folder` (root-relative, "" for the root) that the ignore files
    keep, and its subfolders they keep, in name order; nothing when it cannot be listed."""
    layers = rules.layers_for(folder)
    try:
        with os.scandir(root / folder if folder else root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return [], []
    files: list[FileEntry] = []
    subfolders: list[str] = []
    for entry in entries:
        rel = f"{folder}/{entry.name}" if folder else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if rules.own.owns(rel) or is_ignored(layers, rel, is_dir):
            continue
        if is_dir:
            subfolders.append(rel)
            continue
        try:  # the listing knows a symlink; only the stat of what it points to is asked
            is_link = entry.is_symlink()
            st = entry.stat()
        except OSError:
            continue
        found = _entry(root, entry.path, rel, st, is_link, max_bytes)
        if found is not None:
            files.append(found)
    return files, subfolders


class FolderTree:
    """One workspace folder's files as its index reads them (the port
    service.workspace.tree_ports.FileTree): the functions above on `root`, under its ignore
    rules (`rules`, which leave out tokend's own folders `own`)."""

    def __init__(self, root: Path, own: OwnPaths | None = None) -> None:
        self.root = root
        self.rules = IgnoreRules(root, own)

    def walk(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
        progress: Callable[[int], None] | None = None,
        start: str = "",
    ) -> Iterator[FileEntry]:
        return walk(self.root, self.rules, max_bytes=max_bytes, progress=progress, start=start)

    def list_folder(
        self, folder: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES
    ) -> tuple[list[FileEntry], list[str]]:
        return list_folder(self.root, self.rules, folder, max_bytes=max_bytes)

    def file_entry(self, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileEntry | None:
        return file_entry(self.root, rel, max_bytes)

    def read_file(self, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileRead:
        return read_file(self.root, rel, max_bytes)

    def resolve_inside(self, path: str) -> str:
        return resolve_inside(self.root, path)
