"""The file rank's `cochange` signal (core.repomap.rank): the files the repository's own history
changed in the same commits as a focus file. A maintainer knows which files move together
(a handler and its route table, a parser and its printer) though neither refers to the other;
the history says so too.

The history is the newest COMMITS commits along first parents, merges left out, each as the
paths it changed (the workspace's git history: adapters.git_history). A commit that changed n of
the tree's files (its rows now; 2 <= n <= MAX_FILES) gives each other file it changed 1 / (n - 1)
for each focus file it changed: a file changed with one other is strong evidence, one of twelve
weak; a commit of more files is a sweep (a rename, a reformat, a version bump) and says nothing.
Measured by bench.repomap_cochange on the tuning trees' histories (issue 24's twenty-first
pass), each read only up to its oldest query's commit: MAX_FILES 12 over 20, 30 and 50, and the
1 / (n - 1) share over a plain count, over a count discounted by how often the file changed, and
over older commits weighing less.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Array = Any

COMMITS = 5000  # the newest commits read (a large history's older ones say less of today's tree)
MAX_FILES = 12  # a commit changing more of the tree's files is a sweep: no evidence
SWEEP_PATHS = 256  # a commit changing more paths than this is dropped when read (bounded work)


@dataclass(frozen=True, slots=True)
class History:
    """Each commit's changed paths (newest first) and, for each path, the commits that changed
    it (ascending)."""

    commits: tuple[tuple[str, ...], ...] = ()
    by_path: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, commits: Iterable[Iterable[str]]) -> History:
        """A history of `commits` (their paths; a commit of one path, or of more than
        SWEEP_PATHS, is left out: it can give no file evidence)."""
        kept: list[tuple[str, ...]] = []
        for paths in commits:
            unique = tuple(sorted(set(paths)))
            if 2 <= len(unique) <= SWEEP_PATHS:
                kept.append(unique)
        index: dict[str, list[int]] = {}
        for at, paths in enumerate(kept):
            for path in paths:
                index.setdefault(path, []).append(at)
        return cls(tuple(kept), {p: tuple(at) for p, at in index.items()})


def cochange(history: History, row_of: Callable[[str], int | None], n: int,
             focus: Iterable[str]) -> Array:  # fmt: skip
    """Each of the `n` files' share of the commits it was changed in with a focus file (its row
    by `row_of`; a path the tree no longer has counts for nothing); the focus files score 0.
    Summed in a fixed order (focus paths sorted, commits ascending): the same history and tree
    give the same scores."""
    score = np.zeros(n)
    paths = sorted(set(focus))
    mine = {r for p in paths if (r := row_of(p)) is not None}
    for path in paths:
        for at in history.by_path.get(path, ()):
            rows = sorted({r for p in history.commits[at] if (r := row_of(p)) is not None})
            if not 2 <= len(rows) <= MAX_FILES:
                continue
            others = [r for r in rows if r not in mine]
            score[others] += 1.0 / (len(rows) - 1)
    return score
