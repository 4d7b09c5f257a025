"""A file's lines found in its bytes only as far as a repo map's fit asks for them
(service.workspace.tags: WorkspaceTags's line reader)."""

from __future__ import annotations

import numpy as np


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
