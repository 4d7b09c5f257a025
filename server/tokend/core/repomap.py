"""The repo map's ranking: which definitions matter most for a focus.

The file graph: file r links to file d when r refers to an identifier d defines. A reference
to a name with k definers gives each of them sqrt(occurrences) / k (a name with a leading
underscore: a tenth of that); names with more than MAX_DEFINERS definers (`get`, `__init__`)
say nothing of where to look and are left out. A file's out-edges depend on its own references
and on who defines those names, so a change re-derives the edges of that file and, when its
definitions changed, of the files that refer to those names; nothing else.

Ranking is personalized PageRank over that graph (damping 0.85): the focus files and the files
defining a focus identifier share the restart mass (with a small uniform floor), dangling files
restart like everyone. It is solved exactly as the sparse linear system (I - a P^T) y = v with
SciPy's sparse solver, x = y / sum(y): no hand-written iteration, the same numbers in every
process. The system is the same for every focus (only v changes), so its LU factors are made
once per graph version and each focus is one pair of triangular solves. Past DIRECT_MAX_FILES
files (the kernel) the factors would fill gigabytes, so the same system is solved with SciPy's
BiCGSTAB to a relative residual of 1e-12: still the same numbers in every process. Definitions of a focus identifier come first; then a definition's rank is the rank
that flows to its name along references; ties fall to its file's rank, then path, line, name. Ranks are rounded to
RANK_DECIMALS before sorting, so the order does not hang on the last bits of a float.

The per-version matrices are built once per graph version (any change of tags bumps it);
a file whose new tags equal its old ones (an edited comment) bumps nothing.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]  # SciPy ships no stubs
import scipy.sparse.linalg as spla  # type: ignore[import-untyped]

from tokend.core.repomap_render import RankedDefinition
from tokend.core.repomap_tags import Definition, FileTags

MAX_DEFINERS = 20
DAMPING = 0.85
FOCUS_WEIGHT = 100.0  # restart mass of the focus, against 1.0 spread over every file
RANK_DECIMALS = 15
DIRECT_MAX_FILES = 20_000  # larger graphs are solved iteratively (see _solver)
ITERATIVE_RTOL = 1e-12
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Focus:
    """What the next request is about: files (workspace-relative paths) and identifiers."""

    files: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()


def identifiers_in(text: str, defined: Mapping[str, object]) -> frozenset[str]:
    """The words of `text` (3 characters or more) that the repository defines."""
    return frozenset(w for w in set(_WORD.findall(text)) if len(w) >= 3 and w in defined)


@dataclass(slots=True)
class _Compiled:
    """The graph of one version as arrays: files in path order, definitions in (path, line,
    name) order."""

    paths: list[str]
    index: dict[str, int]
    system: Any  # csc matrix: I - DAMPING * P^T
    solve: Any  # y = solve(v): the system's LU factors (SuperLU), made once per version
    refs: Any  # csr (files x names): sqrt(occurrences) / out-weight of the referring file
    names: list[str]
    name_index: dict[str, int]
    name_scale: Any  # per name: 1/k (x0.1 for a leading underscore)
    def_file: Any  # per definition: its file's index
    def_name: Any  # per definition: its name's index, -1 when the name carries no flow
    definitions: list[Definition]  # RankedDefinition made only for what a rank returns


@dataclass(slots=True)
class RepoGraph:
    """Tags of every source file and the weighted file graph derived from them."""

    tags: dict[str, FileTags] = field(default_factory=dict)
    definers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    referrers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    out_edges: dict[str, dict[str, float]] = field(default_factory=dict)
    version: int = 0
    _compiled: tuple[int, _Compiled] | None = None

    def set_files(self, changed: Mapping[str, FileTags | None]) -> bool:
        """Replace (None: remove) the tags of some files; True when the graph changed."""
        stale: set[str] = set()
        for path, new in changed.items():
            old = self.tags.get(path)
            if old == new:
                continue
            old_defs = {d.name for d in old.definitions} if old else set()
            new_defs = {d.name for d in new.definitions} if new else set()
            for name in old_defs - new_defs:
                self.definers[name].discard(path)
            for name in new_defs - old_defs:
                self.definers[name].add(path)
            for name in old.references if old else ():
                self.referrers[name].discard(path)
            for name in new.references if new else ():
                self.referrers[name].add(path)
            for name in old_defs ^ new_defs:
                stale.update(self.referrers.get(name, ()))
            stale.add(path)
            if new is None:
                self.tags.pop(path, None)
            else:
                self.tags[path] = new
        if not stale:
            return False
        for path in stale:
            if path in self.tags:
                self.out_edges[path] = self._edges_of(path)
            else:
                self.out_edges.pop(path, None)
        self.version += 1
        return True

    def _edges_of(self, path: str) -> dict[str, float]:
        edges: dict[str, float] = defaultdict(float)
        for name, count in sorted(self.tags[path].references.items()):
            found = self.definers.get(name)
            if not found or len(found) > MAX_DEFINERS:
                continue
            weight = _name_scale(name, len(found)) * math.sqrt(count)
            for target in sorted(found):
                if target != path:
                    edges[target] += weight
        return {d: round(w, 9) for d, w in sorted(edges.items())}

    # -- ranking --------------------------------------------------------------------------

    def rank(self, focus: Focus, limit: int | None = None) -> list[RankedDefinition]:
        """The definitions outside the focus files, most relevant first (the first `limit`)."""
        if not self.tags:
            return []
        c = self._compile()
        file_rank = self._pagerank(c, focus)
        flow = c.refs.T @ file_rank * c.name_scale  # per name
        weight = np.where(c.def_name >= 0, flow[np.maximum(c.def_name, 0)], 0.0)
        base = file_rank[c.def_file]
        hit = np.zeros(len(c.definitions), dtype=bool)
        if focus.identifiers:
            hit = np.array([d.name in focus.identifiers for d in c.definitions])
        weight, base = np.round(weight, RANK_DECIMALS), np.round(base, RANK_DECIMALS)
        position = np.arange(len(c.definitions))
        order = np.lexsort((position, -base, -weight, ~hit))
        skip = np.array([p in focus.files for p in c.paths], dtype=bool)
        if skip.any():
            order = order[~skip[c.def_file[order]]]
        if limit is not None:
            order = order[:limit]
        return [RankedDefinition(c.paths[c.def_file[i]], c.definitions[i]) for i in order.tolist()]

    def prepare(self) -> None:
        """Build this version's matrices and factors now (else the next rank builds them)."""
        if self.tags:
            self._compile()

    def _pagerank(self, c: _Compiled, focus: Focus) -> Any:
        n = len(c.paths)
        restart = np.full(n, 1.0 / n)
        wanted = {c.index[p] for p in focus.files if p in c.index}
        for name in focus.identifiers:
            found = self.definers.get(name, set())
            if len(found) <= MAX_DEFINERS:
                wanted.update(c.index[p] for p in found)
        for i in sorted(wanted):
            restart[i] += FOCUS_WEIGHT / len(wanted)
        restart /= restart.sum()
        y = c.solve(restart)
        return np.asarray(y / y.sum())

    def _compile(self) -> _Compiled:
        if self._compiled is not None and self._compiled[0] == self.version:
            return self._compiled[1]
        paths = sorted(self.tags)
        index = {p: i for i, p in enumerate(paths)}
        n = len(paths)
        rows, cols, vals = [], [], []
        for r in paths:
            edges = self.out_edges.get(r) or {}
            total = sum(edges.values())
            for d, w in edges.items():
                rows.append(index[r])
                cols.append(index[d])
                vals.append(w / total)
        p_matrix = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
        system = (sp.identity(n, format="csc") - DAMPING * p_matrix.T).tocsc()
        names = sorted(
            name
            for name, found in self.definers.items()
            if 0 < len(found) <= MAX_DEFINERS and self.referrers.get(name)
        )
        name_index = {name: i for i, name in enumerate(names)}
        name_scale = np.array([_name_scale(nm, len(self.definers[nm])) for nm in names])
        r_rows, r_cols, r_vals = [], [], []
        for r in paths:
            total = sum((self.out_edges.get(r) or {}).values())
            if not total:
                continue
            for name, count in self.tags[r].references.items():
                j = name_index.get(name)
                if j is not None:
                    r_rows.append(index[r])
                    r_cols.append(j)
                    r_vals.append(math.sqrt(count) / total)
        refs = sp.csr_matrix((r_vals, (r_rows, r_cols)), shape=(n, len(names)))
        definitions = [d for p in paths for d in self.tags[p].definitions]
        def_file = np.repeat(
            np.arange(n, dtype=np.int64), [len(self.tags[p].definitions) for p in paths]
        )
        def_name = np.array([name_index.get(d.name, -1) for d in definitions], dtype=np.int64)
        compiled = _Compiled(
            paths,
            index,
            system,
            _solver(system),
            refs,
            names,
            name_index,
            name_scale,
            def_file,
            def_name,
            definitions,
        )
        self._compiled = (self.version, compiled)
        return compiled


def _solver(system: Any) -> Any:
    """y = solve(v) for this version's system: its LU factors up to DIRECT_MAX_FILES files;
    beyond, SciPy's BiCGSTAB from v (factoring a kernel-sized graph fills gigabytes)."""
    if system.shape[0] <= DIRECT_MAX_FILES:
        return spla.splu(system).solve
    operator = system.tocsr()

    def solve(v: Any) -> Any:
        y, info = spla.bicgstab(operator, v, x0=v, rtol=ITERATIVE_RTOL, atol=0.0, maxiter=1000)
        if info != 0:
            raise ArithmeticError(f"the rank did not converge (BiCGSTAB info {info})")
        return y

    return solve


def _name_scale(name: str, definers: int) -> float:
    return (0.1 if name.startswith("_") else 1.0) / definers
