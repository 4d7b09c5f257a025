"""The end of a file, read without reading the whole: the status line's look at a transcript."""

from __future__ import annotations

import os


def tail_lines(path: str, tail_bytes: int) -> list[bytes] | None:
    """The lines in the last `tail_bytes` of the file at `path` (the first may be cut), oldest
    first; None when it cannot be read. How the status line reads a transcript's or a Codex
    rollout's end without reading the whole file."""
    try:
        with open(path, "rb") as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - tail_bytes))
            return stream.read().splitlines()
    except OSError:
        return None
