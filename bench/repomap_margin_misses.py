"""bench.repomap_margin's readers of one tuning tree: each query's misses beside the BM25
baseline's ranking, and the tree's graph rows (kept by its pin, for `near` candidates)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import repomap_eval_baselines as trivial
from bench import repomap_eval_data as data

Order = Callable[[dict[str, Any], Any], Any]  # (bench.repomap_margin.order: a case's ranking)


def misses(repo: str, kind: str, kept: list[dict[str, Any]], order: Order) -> str:
    """Each `kind` query's targets among `kept` (bench.repomap_margin.keep's cases of `repo`):
    rank in the map (`order`), in the BM25 baseline, and by each signal."""
    from tokend.core.repomap.fusion import fusion_for, ranks

    cases = [c for c in kept if c["kind"] == kind]
    tree = data.tree(repo)
    paths = edges_of(repo)["paths"]  # (the same index, its rows in the same order)
    files = sorted(paths)
    bm25 = trivial.BM25(tree, files)
    lines = []
    for c in cases:
        fusion = fusion_for(bool(c["rows"]), bool(c["text"]))
        got = order(c, fusion).tolist()
        asked = (tree / c["file"]).read_text("utf-8", "replace") if c["file"] else c["text"]
        base = bm25.ranking(asked, exclude=c["file"] or None)
        sig = {k: ranks(v) for k, v in c["scores"].items()}
        head = c["file"] or c["text"].splitlines()[0][:70]
        lines.append(f"- {head}")
        for t in c["targets"]:
            p = paths[t]
            where = got.index(t) + 1 if t in got else -1
            b = base.index(p) + 1 if p in base else -1
            each = " ".join(f"{k}={int(r[t]) if c['scores'][k][t] > 0 else '-'}"
                            for k, r in sorted(sig.items()))  # fmt: skip
            lines.append(f"    {p}: map {where}, BM25 {b}; {each}")
    return "\n".join(lines)


def edges_of(repo: str) -> dict[str, Any]:
    """The tree's graph rows (CSR offsets, targets, weights; kept by its pin)."""
    kept = data.OUT / f"marginedges-{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"
    if kept.exists():
        with kept.open("rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]
    index, _ = data.ablate_index(repo)
    graph = index.tags._graph
    e = graph.edges()
    got = {"offsets": np.asarray(e.offsets), "targets": np.asarray(e.targets),
           "weights": np.asarray(e.weights), "paths": list(graph.paths)}  # fmt: skip
    with kept.open("wb") as f:
        pickle.dump(got, f)
    return got
