"""Checkpoints: what a run of file changes did to each path, and a file's diff between two states.

`summarize` folds a run of `FileChange`s (core.checkpoints.turns) into one `FileSummary` per path;
`line_counts` and `unified_diff` compare two states' bytes (None: absent).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tokend.core.checkpoints.turns import FileChange


@dataclass(frozen=True, slots=True)
class FileSummary:
    """One path over a run of changes: first `before` to last `after`."""

    path: str
    before: str | None
    after: str | None
    kind: Literal["created", "deleted", "modified", "moved", "unchanged"]
    moved_from: str | None = None
    moved_to: str | None = None
    notes: tuple[str, ...] = ()


def summarize(changes: Sequence[FileChange]) -> list[FileSummary]:
    """Per path, in path order: what the run of changes did to it."""
    by_path: dict[str, list[FileChange]] = {}
    for c in sorted(changes, key=lambda c: c.seq):
        by_path.setdefault(c.path, []).append(c)
    out = []
    for path in sorted(by_path):
        run = by_path[path]
        first, last = run[0], run[-1]
        before, after = first.before, last.after
        notes = tuple(dict.fromkeys(c.note for c in run if c.note))
        if before is None and after is None:
            continue  # created and deleted within the run
        if before is None:
            kind: Literal["created", "deleted", "modified", "moved", "unchanged"] = "created"
        elif after is None:
            kind = "deleted"
        elif before == after:
            kind = "unchanged"
        else:
            kind = "modified"
        moved_from = first.moved_from if before is None else None
        moved_to = last.moved_to if after is None else None
        if moved_from:
            kind = "moved"
        out.append(FileSummary(path, before, after, kind, moved_from, moved_to, notes))
    return out


def line_counts(before: bytes | None, after: bytes | None) -> tuple[int, int] | None:
    """(lines added, lines removed) between two states; None when either is not text."""
    a, b = _lines(before), _lines(after)
    if a is None or b is None:
        return None
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def unified_diff(
    path: str, before: bytes | None, after: bytes | None, moved_from: str | None = None
) -> str:
    """A unified diff of one file (git's a/ b/ names, /dev/null for an absent side)."""
    a, b = _lines(before), _lines(after)
    old = "/dev/null" if before is None else f"a/{moved_from or path}"
    new = "/dev/null" if after is None else f"b/{path}"
    if a is None or b is None:
        return f"Binary files {old} and {new} differ\n"
    lines = list(difflib.unified_diff(a, b, old, new))
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _lines(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\x00" in data[:8000]:
        return None
    return data.decode("utf-8", "replace").splitlines(keepends=True)
