"""Each signal of the repo map's file rank left out, one at a time, on the six repositories of
bench.repomap_eval (its queries, its targets): recall at k of the ranked files alone, no map
rendered, so the six fit in minutes where repomap_eval's REPOMAP_EVAL_ABLATE=1 renders two maps
a query and side. In one process per run: the tree's tags are parsed once (a cache under
bench/out/eval), then `RepoGraph.use` switches the signals and the rows are derived again.

Rows: `all` (the map's rank), then `without X` for each field of core.repomap.rank.Signals:
graph, lexical, folder (the fused signals), resolve (references sent to the definers a file's
imports reach), imports (a file's edges to the modules it imports), specific (compound names
weigh more), words (a task's text read against what each file says, not only its names and
path), seed (a task's best lexical hits personalize the graph's rank), file_words (what a focus
file says read against what each file says), near (the graph's edges to and from the focus).
`without graph` leaves out the graph's import resolution and edges and its rank as the
tie-breaker (the fused PageRank has weight 0 since the fourth pass). REPOMAP_EVAL_REPOS picks repositories, as for
repomap_eval.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import fields
from pathlib import Path
from typing import Any

from bench import repomap_eval_data as data
from bench.repomap_eval import KS, _jobs


def _recalls(graph: Any, jobs: list[dict[str, Any]], kind: str) -> list[float]:
    from tokend.core.repomap.graph import Focus, identifiers_in

    got: dict[int, list[float]] = {k: [] for k in KS}
    for j in jobs:
        if j["kind"] != kind:
            continue
        if kind == "file":
            focus = Focus(frozenset(j["files"]))
        else:
            focus = Focus(frozenset(), identifiers_in(j["text"], graph.defines), j["text"])
        ranked = [p for p, _ in graph.rank_files(focus)]
        for k in KS:
            got[k].append(len(set(ranked[:k]) & set(j["targets"])) / len(j["targets"]))
    return [statistics.mean(got[k]) for k in KS]


def evaluate(repo: str) -> tuple[list[tuple[str, str, list[float]]], int, int]:
    from tokend.adapters import blas
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules
    from tokend.adapters.workspace_cache import WorkspaceCache
    from tokend.core.repomap.rank import Signals
    from tokend.service.app_workspaces import index_ports
    from tokend.service.workspace.index import WorkspaceIndex

    blas.single_threaded()
    tree = data.tree(repo)
    walked = [e.path for e in walk(tree, IgnoreRules(tree)) if not e.skipped]
    files = sorted(f for f in walked if data._is_source(f))
    queries = data.queries(repo, set(files))
    jobs = _jobs(tree, queries, files)
    cache = data.OUT / f"ablate-{repo.replace('/', '+')}.sqlite3"
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(Path(cache)), index_ports())
    index.build()
    graph = index.tags._graph
    rows = []
    for name in ["all", *(f.name for f in fields(Signals))]:
        graph.use(Signals() if name == "all" else Signals(**{name: False}))
        side = "tokend" if name == "all" else f"tokend without {name}"
        for kind in ("file", "task"):
            rows.append((side, kind, _recalls(graph, jobs, kind)))
    return rows, len(files), len(queries)


def run() -> str:
    wanted = os.environ.get("REPOMAP_EVAL_REPOS")
    repos = [r for r in data.REPOS if not wanted or r in wanted.split(",")]
    lines = [
        "### repomap_ablate: each signal of the file rank left out\n",
        "bench.repomap_eval's queries and targets; recall at k of the ranked files alone (no map "
        "rendered). Rows: the map's rank, then one signal left out at a time.\n",
    ]
    for repo in repos:
        rows, n_files, n_queries = evaluate(repo)
        pin, role = data.REPOS[repo]
        lines.append(f"\n**{repo}** @ {pin[:12]} ({role}; {n_files} source files, "
                     f"{n_queries} commits)\n")  # fmt: skip
        lines.append("| side | query | " + " | ".join(f"R@{k}" for k in KS) + " |")
        lines.append("|---|---|" + "---:|" * len(KS))
        for side, kind, got in rows:
            lines.append(f"| {side} | {kind} | " + " | ".join(f"{g:.3f}" for g in got) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
