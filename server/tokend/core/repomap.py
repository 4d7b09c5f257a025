"""The repo map's ranking: which definitions matter most for a focus.

The file graph: file r links to file d when r refers to an identifier d defines. A reference
to a name with k definers gives each of them sqrt(occurrences) / k (a name with a leading
underscore: a tenth of that); names with more than MAX_DEFINERS definers (`get`, `__init__`)
say nothing of where to look and are left out. A file's out-edges (its row) depend on its own
references and on who defines those names, so a change re-derives the row of that file and,
when its definitions changed, the rows of the files that refer to those names; every other
row is kept as it is and the new rows are spliced in. A row's weights are summed in one fixed
order and rounded to 9 decimals, whether it is derived alone or with all the others: a graph
updated in place is the graph a new process builds, bit for bit.

Ranking is personalized PageRank over that graph (damping 0.85): the focus files and the files
defining a focus identifier share the restart mass (with a small uniform floor), dangling files
restart like everyone. It is solved exactly as the sparse linear system (I - a P^T) y = v with
SciPy's sparse solver, x = y / sum(y): no hand-written iteration, the same numbers in every
process. Up to DIRECT_MAX_FILES files the system's LU factors are made once per graph version
and each focus is one pair of triangular solves; past it (the kernel) the factors would fill
gigabytes, so the same system is solved with SciPy's BiCGSTAB to a relative residual of 1e-12.
Definitions of a focus identifier come first; then a definition's rank is the rank that flows
to its name along references; ties fall to its file's rank, then path, line, name key. Ranks
are rounded to RANK_DECIMALS before sorting, so the order does not hang on the last bits.

The tags are packed (core.repomap_store): names are 64-bit keys, definitions keep their line
and not its text, which the caller reads when it renders the map.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped]  # SciPy ships no stubs
import scipy.sparse.linalg as spla  # type: ignore[import-untyped]

from tokend.core import repomap_edges as graph_rows
from tokend.core.repomap_edges import MAX_DEFINERS, Edges, renumbered, replaced
from tokend.core.repomap_render import RankedDefinition
from tokend.core.repomap_store import PackedTags, TagTable, name_key
from tokend.core.repomap_tags import FileTags

DAMPING = 0.85
FOCUS_WEIGHT = 100.0  # restart mass of the focus, against 1.0 spread over every file
RANK_DECIMALS = 15
DIRECT_MAX_FILES = 20_000  # larger graphs are solved iteratively (see _solver)
ITERATIVE_RTOL = 1e-12
TRACK_MAX_FILES = 256  # larger batches re-sort the definers and re-derive every row
RANK_BLOCK = 1 << 17  # definitions weighed at once (bounds the memory of a rank)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Array = Any


@dataclass(frozen=True, slots=True)
class Focus:
    """What the next request is about: files (workspace-relative paths) and identifiers."""

    files: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()


def identifiers_in(text: str, defines: Callable[[str], bool]) -> frozenset[str]:
    """The words of `text` (3 characters or more) that the repository defines."""
    return frozenset(w for w in set(_WORD.findall(text)) if len(w) >= 3 and defines(w))


@dataclass(slots=True)
class _Ranking:
    """What every rank of one graph version shares."""

    solve: Callable[[Array], Array]


@dataclass(slots=True)
class RepoGraph:
    """Tags of every source file and the weighted file graph derived from them."""

    table: TagTable = field(default_factory=TagTable)
    version: int = 0
    _edges: Edges | None = None  # None: every row is to be derived
    _stale: set[str] = field(default_factory=set)  # paths whose rows are to be derived again
    _ranking: tuple[int, _Ranking] | None = None

    def set_files(self, changed: Mapping[str, FileTags | None]) -> bool:
        """Replace (None: remove) the tags of some files; True when the graph changed."""
        packed: dict[str, PackedTags | None] = {}
        for path, tags in changed.items():
            new = PackedTags.of(tags) if tags is not None else None
            row = self.table.row(path)
            if new is None and row is None:
                continue
            if new is not None and row is not None and self._same(row, new):
                continue
            packed[path] = new
        if not packed:
            return False
        track = self._edges is not None and len(packed) <= TRACK_MAX_FILES
        applied = self.table.apply(packed, track=track)
        if track and self._edges is not None:
            self._edges = renumbered(self._edges, applied.remap, len(self.table.paths))
            stale = set(applied.rows) | set(self._referrers(applied.names).tolist())
            self._stale.update(self.table.paths[r] for r in stale)
        else:
            self._edges, self._stale = None, set()
        self.version += 1
        return True

    def _same(self, row: int, new: PackedTags) -> bool:
        t = self.table
        d, r = slice(t.d_off[row], t.d_off[row + 1]), slice(t.r_off[row], t.r_off[row + 1])
        return (
            np.array_equal(t.keys_at(d.start, d.stop), new.def_keys)
            and np.array_equal(t.d_line[d], new.def_lines)
            and np.array_equal(t.r_key[r], new.ref_keys)
            and np.array_equal(t.r_count[r], new.ref_counts)
        )

    def _referrers(self, keys: Array) -> Array:
        """Rows of the files that refer to any of `keys`."""
        if not len(keys):
            return np.zeros(0, dtype=np.int64)
        hits = np.flatnonzero(np.isin(self.table.r_key, keys))
        return np.unique(np.searchsorted(self.table.r_off, hits, side="right") - 1)

    # -- reads -----------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        return self.table.paths

    def defines(self, name: str) -> bool:
        return len(self.table.definer_rows(name_key(name))) > 0

    def definers_of(self, name: str) -> list[str]:
        return [self.table.paths[r] for r in self.table.definer_rows(name_key(name)).tolist()]

    # -- the graph's rows ----------------------------------------------------------------------

    def edges(self) -> Edges:
        """This version's rows: kept ones as they are, stale ones derived again."""
        n = len(self.table.paths)
        if self._edges is None:
            self._edges = graph_rows.derive_rows(self.table, np.arange(n, dtype=np.int64))
            self._stale = set()
        elif self._stale:
            rows = np.array(sorted(r for p in self._stale if (r := self.table.row(p)) is not None))
            fresh = graph_rows.derive_rows(self.table, rows)
            self._edges = replaced(self._edges, rows, fresh)
            self._stale = set()
        return self._edges

    # -- ranking --------------------------------------------------------------------------

    def prepare(self) -> None:
        """Derive this version's rows and solver now (else the next rank does)."""
        if self.table.paths:
            self._prepared()

    def rank(self, focus: Focus, limit: int | None = None) -> list[RankedDefinition]:
        """The definitions outside the focus files, most relevant first (the first `limit`)."""
        if not self.table.paths:
            return []
        c = self._prepared()
        t = self.table
        file_rank = self._pagerank(c, focus)
        group_weight = self._flow(file_rank)
        np.round(group_weight, RANK_DECIMALS, out=group_weight)
        file_base: Array = np.round(file_rank, RANK_DECIMALS)
        found = (t.group_of(name_key(i)) for i in focus.identifiers)
        wanted = np.array(sorted({g for g in found if g is not None}), dtype=np.int32)
        valid = np.ones(len(t.paths), dtype=bool)
        for p in focus.files:
            if (row := t.row(p)) is not None:
                valid[row] = False
        picked = []
        for start in range(0, len(t.d_line), RANK_BLOCK):  # a block at a time: bounded memory
            block = slice(start, start + RANK_BLOCK)
            files = _file_of(t.d_off, np.arange(start, min(start + RANK_BLOCK, len(t.d_line))))
            picked.append(
                start
                + _first(
                    group_weight[t.d_group[block]],
                    file_base[files],
                    np.isin(t.d_group[block], wanted),
                    valid[files],
                    limit,
                )
            )
        chosen = np.concatenate(picked) if picked else np.zeros(0, dtype=np.int64)
        chosen_files = _file_of(t.d_off, chosen)
        weight, base = group_weight[t.d_group[chosen]], file_base[chosen_files]
        hit = np.isin(t.d_group[chosen], wanted)
        ranked = np.lexsort((chosen, -base, -weight, ~hit))
        if limit is not None:
            ranked = ranked[:limit]
        files, lines = chosen_files[ranked].tolist(), t.d_line[chosen[ranked]].tolist()
        return [RankedDefinition(t.paths[f], li) for f, li in zip(files, lines, strict=True)]

    def _flow(self, file_rank: Array) -> Array:
        """The rank flowing to each name (by group) along the references that carry flow:
        file rank x sqrt(occurrences) x the name's scale / the file's total, summed in
        reference order; worked out a block of references at a time at each rank (kept, the
        weights would hold 23 MiB on the kernel)."""
        t, edges = self.table, self.edges()
        group_weight = np.zeros(len(t.groups()))
        starts = t.definers()[1]
        for start in range(0, len(t.r_key), RANK_BLOCK):
            end = min(start + RANK_BLOCK, len(t.r_key))
            rows = _file_of(t.r_off, np.arange(start, end))
            group = t.r_group[start:end]
            definers = np.zeros(len(group), dtype=np.int32)  # of each reference's name
            known = group >= 0
            definers[known] = starts[group[known] + 1] - starts[group[known]]
            keep = (definers >= 1) & (definers <= MAX_DEFINERS) & (edges.totals[rows] > 0)
            group = group[keep]
            scale = np.where(t.r_key[start:end][keep] & np.uint64(1), 0.1, 1.0)
            scale /= definers[keep]
            flow = np.sqrt(t.r_count[start:end][keep].astype(np.float64))
            flow *= scale
            flow /= edges.totals[rows[keep]]
            flow *= file_rank[rows[keep]]
            np.add.at(group_weight, group, flow)
        return group_weight

    def _pagerank(self, c: _Ranking, focus: Focus) -> Array:
        n = len(self.table.paths)
        restart = np.full(n, 1.0 / n)
        wanted = {r for p in focus.files if (r := self.table.row(p)) is not None}
        for name in focus.identifiers:
            rows = self.table.definer_rows(name_key(name))
            if len(rows) <= MAX_DEFINERS:
                wanted.update(rows.tolist())
        for i in sorted(wanted):
            restart[i] += FOCUS_WEIGHT / len(wanted)
        restart /= restart.sum()
        y = c.solve(restart)
        return np.asarray(y / y.sum())

    def _prepared(self) -> _Ranking:
        if self._ranking is not None and self._ranking[0] == self.version:
            return self._ranking[1]
        self._ranking = None  # the old version's arrays go before the new ones are made
        edges, t = self.edges(), self.table
        n = len(t.paths)
        p_matrix = sp.csr_matrix((edges.weights, edges.targets, edges.offsets), shape=(n, n))
        ranking = _Ranking(_solver(p_matrix))
        self._ranking = (self.version, ranking)
        return ranking


def _file_of(offsets: Array, positions: Array) -> Array:
    """The row of each entry position of a table whose rows start at `offsets`."""
    return np.searchsorted(offsets, positions, side="right") - 1


def _first(weight: Array, base: Array, hit: Array, valid: Array, limit: int | None) -> Array:
    """Which of the valid entries are the first `limit` of the order (focus hits, then weight,
    then base, then position; all descending but position), as positions in no particular
    order: partitions, not a sort (the kernel: 4,000 of 2.9 million definitions)."""
    everyone = np.flatnonzero(valid)
    if limit is None or len(everyone) <= limit:
        return everyone
    hits = np.flatnonzero(valid & hit)
    if len(hits) >= limit:
        return _best(hits, weight, base, limit)
    others = np.flatnonzero(valid & ~hit)
    return np.concatenate([hits, _best(others, weight, base, limit - len(hits))])


def _best(among: Array, weight: Array, base: Array, limit: int) -> Array:
    """The `limit` entries of `among` (ascending positions) first by weight, then base, then
    position."""
    if len(among) <= limit:
        return among
    weights = weight[among]
    cut = np.partition(weights, len(weights) - limit)[len(weights) - limit]
    above, tied = among[weights > cut], among[weights == cut]
    limit -= len(above)
    bases = base[tied]
    base_cut = np.partition(bases, len(bases) - limit)[len(bases) - limit]
    higher, level = tied[bases > base_cut], tied[bases == base_cut]
    return np.concatenate([above, higher, level[: limit - len(higher)]])


def _solver(p_matrix: Any) -> Callable[[Array], Array]:
    """y = solve(v) for (I - DAMPING P^T) y = v: its LU factors up to DIRECT_MAX_FILES files;
    beyond, SciPy's BiCGSTAB from v on the operator (no matrix is formed or factored)."""
    n = p_matrix.shape[0]
    if n <= DIRECT_MAX_FILES:
        system = (sp.identity(n, format="csc") - DAMPING * p_matrix.T).tocsc()
        solve: Callable[[Array], Array] = spla.splu(system).solve
        return solve
    transposed = p_matrix.T  # a CSC view: no copy
    operator = spla.LinearOperator(
        (n, n), matvec=lambda y: y - DAMPING * (transposed @ y), dtype=np.float64
    )

    def iterate(v: Array) -> Array:
        y, info = spla.bicgstab(operator, v, x0=v, rtol=ITERATIVE_RTOL, atol=0.0, maxiter=1000)
        if info != 0:
            raise ArithmeticError(f"the rank did not converge (BiCGSTAB info {info})")
        return np.asarray(y)

    return iterate
