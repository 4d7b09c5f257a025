"""A file's lines found in its bytes only as far as a repo map's fit asks for them
(service.workspace.tags: WorkspaceTags's line reader)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from tokend.core.workspace.files import PathConflict
from tokend.service.ports import WorkspaceFiles


class FileLines:
    """A file's lines found in its bytes as far as they are asked for: line n is
    `data.split(b"\\n")[n]`, b"" past the end. The bytes are kept once, with where each line
    found so far ends (8 bytes a line), not cut into a bytes object a line (issue 22: the map
    of a text focus shows big headers, whose lines were held as objects through the whole fit:
    11-17 MiB of the kernel daemon's requests)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._ends = np.zeros(0, dtype=np.int64)  # the newlines found so far (their offsets)
        self._scanned = 0  # the bytes looked through so far

    def line(self, n: int) -> bytes:
        data = self._data
        while n >= len(self._ends) and self._scanned < len(data):
            stop = min(len(data), self._scanned + max(SCAN_FIRST, self._scanned))  # doubling
            part = np.frombuffer(data, np.uint8, stop - self._scanned, self._scanned)
            found = np.flatnonzero(part == NEWLINE) + self._scanned
            self._ends = np.concatenate([self._ends, found])
            self._scanned = stop
        start = int(self._ends[n - 1]) + 1 if 0 < n <= len(self._ends) else 0
        if n < len(self._ends):
            return data[start : int(self._ends[n])]
        return data[start:] if n == len(self._ends) else b""


SCAN_FIRST = 1 << 16  # bytes looked through for a file's first line asked (then twice as many)
NEWLINE = ord("\n")


def line_reader(
    read: Callable[[str], bytes], wanted: Mapping[str, set[int]] | None = None
) -> Callable[[str, int], str]:
    """(path, line) -> that line's text, from `read(path)` (its bytes now); each file read once
    per map, split only as far as the lines asked for (SQLAlchemy's first map split 19 MB into
    400,000 lines to show 462), its `wanted` lines (a map's candidates) taken as text and its
    bytes let go (issue 22: a kernel's text focus held the bytes of every big header it read,
    13-14 MiB)."""
    files: dict[str, dict[int, str]] = {}

    def text_of(path: str, line: int) -> str:
        lines = files.get(path)
        if lines is None or line not in lines:
            found, asked = FileLines(read(path)), {line, *(wanted or {}).get(path, ())}
            lines = files.setdefault(path, {})
            for n in sorted(asked - lines.keys()):
                lines[n] = found.line(n).decode("utf-8", "replace")
        return lines[line]

    return text_of


def bytes_now(
    files: WorkspaceFiles, root: Path, overlay: Callable[[str], str | None], path: str
) -> bytes:
    """A file's bytes now: its unsaved buffer (`overlay`), else the file on disk (b"":
    unreadable)."""
    unsaved = overlay(path)
    if unsaved is not None:
        return unsaved.encode("utf-8", "surrogatepass")
    try:
        return files.read_bytes(root, path)
    except (OSError, PathConflict):
        return b""
