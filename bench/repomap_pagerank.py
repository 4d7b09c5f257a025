"""Issue 18's SciPy question: the repo map's PageRank solved by SciPy (SuperLU factors per graph
version, then a pair of triangular solves per focus; BiCGSTAB past 20,000 files) beside power
iteration in numpy alone (power_solver below), on the trees of bench.repomap_eval
(the largest: vite, 1,569 source files). Per tree: the seconds to prepare a graph version (SciPy:
the factorization; numpy: the edge rows), the median seconds of one solve over FOCUSES focuses,
the largest relative difference of the ranks, and whether the ranked files and the maps
(1,024 and 4,096 tokens, o200k_base) are the same.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import repomap_eval_data as data
from tokend.core.repomap import solve as repomap_solve

FOCUSES = 20
BUDGETS = (1024, 4096)


POWER_TOL = 1e-13  # the power iteration stops when a step changes y by less (L1, relative)
POWER_MAX_STEPS = 1000


def power_solver(offsets: Any, targets: Any, weights: Any, n: int) -> Any:
    """y = solve(v) as repomap_solve.solver gives it, by power iteration in numpy alone:
    y <- v + DAMPING P^T y from y = v, each product a bincount over the edges in their fixed
    order (the same sums in every process)."""
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))

    def iterate(v: Any) -> Any:
        y = np.array(v, dtype=np.float64)
        for _ in range(POWER_MAX_STEPS):
            spread = np.bincount(targets, weights=weights * y[rows], minlength=n)
            new = v + repomap_solve.DAMPING * spread
            change = float(np.abs(new - y).sum())
            y = new
            if change <= POWER_TOL * float(np.abs(y).sum()):
                return y
        raise ArithmeticError("the rank did not converge")

    return iterate


def _measure(repo: str) -> dict[str, Any]:
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules
    from tokend.adapters.tokenizers import load_encoding
    from tokend.adapters.workspace_cache import WorkspaceCache
    from tokend.core.repomap import graph as repomap
    from tokend.core.repomap.graph import Focus
    from tokend.service.app_workspaces import index_ports
    from tokend.service.workspace.index import WorkspaceIndex

    enc = load_encoding("o200k_base")
    tree = data.tree(repo)
    walked = [e.path for e in walk(tree, IgnoreRules(tree)) if not e.skipped]
    files = sorted(f for f in walked if data._is_source(f))
    with tempfile.TemporaryDirectory() as scratch:
        index = WorkspaceIndex(
            tree.as_uri(), tree, WorkspaceCache(Path(scratch) / "c.sqlite3"), index_ports()
        )
        index.build()
        graph = index.tags._graph
        edges, n = graph.edges(), len(graph.paths)
        focuses = [files[i * len(files) // FOCUSES] for i in range(FOCUSES)]
        out: dict[str, Any] = {"files": n, "edges": len(edges.targets)}
        ranks: dict[str, list[Any]] = {}
        for name, make in (("scipy", repomap_solve.solver), ("numpy", power_solver)):
            started = time.perf_counter()
            solve = make(edges.offsets, edges.targets, edges.weights, n)
            out[f"{name} prepare"] = time.perf_counter() - started
            seconds, got = [], []
            for f in focuses:
                v = np.full(n, 1.0 / n)
                v[graph.table.row(f)] += repomap.FOCUS_WEIGHT
                v /= v.sum()
                started = time.perf_counter()
                y = solve(v)
                seconds.append(time.perf_counter() - started)
                got.append(y / y.sum())
            out[f"{name} solve"] = statistics.median(seconds)
            ranks[name] = got
            real = repomap.solver
            repomap.solver = make  # type: ignore[assignment]  # the map with this solver
            try:
                graph._ranking = None
                index.tags._maps.clear()
                out[f"{name} files"] = [[p for p, _ in graph.rank_files(Focus(frozenset([f])))]
                                        for f in focuses]  # fmt: skip
                out[f"{name} maps"] = [
                    index.tags.repo_map(Focus(frozenset([f])), b, lambda t: len(enc.encode_ordinary(t)), "o").text
                    for f in focuses for b in BUDGETS
                ]  # fmt: skip
            finally:
                repomap.solver = real  # type: ignore[assignment]
                graph._ranking = None
        out["max relative difference"] = max(
            float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)))
            for a, b in zip(ranks["scipy"], ranks["numpy"], strict=True)
        )
        index.close()
    return out


def run() -> str:
    lines = [
        "### repomap_pagerank: SciPy's solve beside power iteration in numpy\n",
        f"Per tree: {FOCUSES} focus files; prepare = per graph version (SciPy: LU factors; numpy: "
        "the edges' rows), solve = median seconds per focus; same files = the full file rank "
        "identical for every focus; same maps = every map (1,024 and 4,096 tokens) byte-identical.\n",
        "| tree | files | edges | SciPy prepare s | numpy prepare s | SciPy solve s | numpy solve s "
        "| max rel. diff | same files | same maps |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for repo in data.REPOS:
        m = _measure(repo)
        lines.append(
            f"| {repo} | {m['files']} | {m['edges']} | {m['scipy prepare']:.4f} | "
            f"{m['numpy prepare']:.4f} | {m['scipy solve']:.5f} | {m['numpy solve']:.5f} | "
            f"{m['max relative difference']:.1e} | {m['scipy files'] == m['numpy files']} | "
            f"{m['scipy maps'] == m['numpy maps']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
