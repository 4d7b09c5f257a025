"""The imports of every file of the repo map's graph, and what they give the graph's rows
(core.repomap.edges.Links): the files each file's references may go to, the modules it links to.

A row's links depend on its own imports, on the workspace's paths (which file an import names)
and on the imports of the re-export modules it reaches. So `changed` names the rows to derive
again beyond those of the changed files: when a file comes or goes, every file with imports (and
every Go file of its folder: a Go file reaches its package); when a re-export module's imports
change, the files that import it.
"""

from __future__ import annotations

import posixpath
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tokend.core.repomap import imports as resolve
from tokend.core.repomap.edges import Links
from tokend.core.repomap.imports import PathIndex

Array = Any


class ImportLinks:
    def __init__(self) -> None:
        self.imports: dict[str, tuple[str, ...]] = {}  # files with imports only
        self._index: tuple[list[str], PathIndex] | None = None
        self._by_key: dict[str, set[str]] = {}  # resolve.spec_key -> files with such an import

    def same(self, path: str, imports: tuple[str, ...]) -> bool:
        return self.imports.get(path, ()) == imports

    def changed(
        self, changed: Mapping[str, tuple[str, ...] | None], before: list[str], after: list[str]
    ) -> set[str]:
        """Record the changed files' imports (None: the file left); the other paths whose rows
        are to be derived again: those with an import that may name a file that came or went
        (by resolve.spec_key), or a re-export module whose imports changed; then those that
        import a re-export module among these."""
        moved = {p for p, imports in changed.items() if (imports is None) == _listed(before, p)}
        touched = moved | {p for p, imports in changed.items() if resolve.is_reexport(p)
                           and imports is not None and not self.same(p, imports)}  # fmt: skip
        for path, imports in changed.items():
            for spec in self.imports.pop(path, ()):
                self._by_key.get(resolve.spec_key(path, spec), set()).discard(path)
            for spec in imports or ():
                self._by_key.setdefault(resolve.spec_key(path, spec), set()).add(path)
            if imports:
                self.imports[path] = imports
        stale = self._importers(touched)
        stale |= self._importers({p for p in stale if resolve.is_reexport(p)})
        folders = {posixpath.dirname(p) for p in moved if p.endswith(".go")}
        if folders:  # (every path looked at: for each chunk of a first build, issue 22)
            stale.update(p for p in after if p.endswith(".go") and posixpath.dirname(p) in folders)
        return stale - set(changed)

    def _importers(self, paths: set[str]) -> set[str]:
        found: set[str] = set()
        for path in paths:
            found.update(self._by_key.get(resolve.file_key(path), ()))
        return found

    def index(self, paths: list[str]) -> PathIndex:
        if self._index is None or self._index[0] != paths:
            self._index = (paths, resolve.path_index(paths))
        return self._index[1]

    def links(self, paths: list[str], rows: Array, *, reach: bool, imports: bool,
              specific: bool) -> Links:  # fmt: skip
        """The links of `rows` (rows of `paths`, which are sorted), with the signals asked for."""
        if not (reach or imports):
            return Links(specific=specific)
        resolution = resolve.Resolution(self.index(paths), self.imports)
        known: dict[str, int] = {}  # a path's row, looked up once per derivation

        def rows_of(found: Iterable[str]) -> list[int]:
            out = []
            for p in found:
                row = known.get(p)
                if row is None:
                    row = known[p] = bisect_left(paths, p)
                out.append(row)
            return out

        reached: dict[int, Array] = {}
        direct: dict[int, tuple[Array, Array]] = {}
        for row in rows.tolist():
            path = paths[row]
            if path not in self.imports and not path.endswith(".go"):
                continue
            if reach:
                found = resolution.reach(path)
                reached[row] = np.array(rows_of(found), dtype=np.int64)
            if imports and path in self.imports:
                weights = resolution.imported(path)
                order = sorted(zip(rows_of(weights), weights.values(), strict=True))
                direct[row] = (np.array([r for r, _ in order], dtype=np.int32),
                               np.array([w for _, w in order]))  # fmt: skip
        return Links(reached, direct, specific)


def _listed(paths: list[str], path: str) -> bool:  # `paths` is sorted
    i = bisect_left(paths, path)
    return i < len(paths) and paths[i] == path
