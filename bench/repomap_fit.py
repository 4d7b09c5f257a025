"""Which fusion of the file rank's signals ranks best, chosen on the tuning repositories only
(bench.repomap_eval_data's `tuning` role), then measured once on the held-out ones.

Each signal's score of every file is worked out once per query (in process, the tree's tags
from bench/out/eval's ablate caches): `lexical` (BM25 of names and path words, and what files
say), `graph` (personalized PageRank), `folder` (nearness in the folder tree), `near` (the
reference graph's edges between the focus files and each file, both ways), `said` (BM25 of what
files say alone, core.repomap.said: a file focus's query cut to its RARE rarest shared words),
`said_all` (the same, the file focus's words uncut: measured, not kept) and `whole` (the
BM25 baseline's score over each file's whole text: measured as a signal core does not keep).
Then every candidate fusion (core.repomap.rank.fused's reciprocal-rank fusion with other weights and K)
is scored on those arrays: recall at k of the ranked files, no map rendered. The candidate
with the best mean over the tuning repositories and k = 1, 3, 5, 10 (no held-out figure read)
is printed first; REPOMAP_FIT_HELD=1 adds the held-out rows of the chosen and current ones.
A fusion may add a scaled part (core.repomap.fusion): each signal's score over its best, times
a weight, beside the reciprocal ranks (issue 24's ninth pass: a text's margin).
Tuning: two repositories each of Python, TypeScript and Go (bench.repomap_eval_data).
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
from dataclasses import replace
from typing import Any

import numpy as np

from bench import repomap_eval_baselines as trivial
from bench import repomap_eval_data as data
from bench.repomap_eval import KS, _jobs

Array = Any


def _near(graph: Any, focus: dict[int, float]) -> Array:
    from tokend.core.repomap.rank import near

    edges = graph.edges()
    return near(edges.offsets, edges.targets, edges.weights, focus)


def components(graph: Any, job: dict[str, Any]) -> tuple[dict[str, Array], list[int], bool]:
    from tokend.core.repomap import rank as signals_of
    from tokend.core.repomap.choice import RANK_DECIMALS
    from tokend.core.repomap.graph import Focus, identifiers_in
    from tokend.core.repomap.said import compound_ids, query_ids, said_scores

    if job["kind"] == "file":
        focus = Focus(frozenset(job["files"]))
    else:
        focus = Focus(frozenset(), identifiers_in(job["text"], graph.defines), job["text"])
    rows = sorted(graph._focus_rows(focus))
    text_only = bool(focus.text) and not rows
    lexical = graph._lexical(rows, focus.text, text_only)
    seeds = signals_of.seeds(lexical, signals_of.SEEDS) if text_only else {}
    rank = graph._pagerank(graph._prepared(), focus, seeds)
    out = {"lexical": lexical, "graph": np.round(rank, RANK_DECIMALS),
           "folder": signals_of.folder(graph._paths_terms(), rows)}  # fmt: skip
    if rows:
        out["near"] = np.round(_near(graph, dict.fromkeys(rows, 1.0)), RANK_DECIMALS)
    elif seeds:
        out["near"] = np.round(_near(graph, seeds), RANK_DECIMALS)
    n, words = len(graph.table.paths), graph.words
    ids = query_ids(words, graph.signals, rows, focus.text)
    out["said"] = said_scores(words, n, rows, ids)
    out["said_all"] = said_scores(words, n, [], ids)  # no cut
    out["compounds"] = said_scores(words, n, [], compound_ids(focus.text) if text_only else None)
    kept = graph.signals
    graph.signals = replace(kept, words=False, file_words=False)
    try:
        out["names"] = graph._lexical(rows, focus.text, text_only)
    finally:
        graph.signals = kept
    return out, rows, text_only


def fuse(scores: dict[str, Array], weights: dict[str, float], k: float,
         scaled: dict[str, float] | None = None) -> Array:  # fmt: skip
    """core.repomap.fusion.fused with these weights, K and scaled part; K < 0: each score over
    its best, summed (not reciprocal ranks)."""
    from tokend.core.repomap.fusion import Fusion, fused

    n = len(next(iter(scores.values())))
    if k >= 0:
        return np.round(fused(scores, n, Fusion(weights, k, scaled or {})), 12)
    total = np.zeros(n)
    for name in sorted(scores):
        top = float(scores[name].max())
        if weights.get(name) and top > 0:
            total += weights[name] * scores[name] / top
    return np.round(total, 12)


def recalls(cases: list[tuple[dict[str, Array], list[int], list[int]]], weights: dict[str, float],
            k: float, scaled: dict[str, float] | None = None) -> list[float]:  # fmt: skip
    got: dict[int, list[float]] = {x: [] for x in KS}
    for scores, rows, targets in cases:
        total = fuse(scores, weights, k, scaled)
        order = np.lexsort((np.arange(len(total)), -scores["graph"], -total))  # as core's
        order = order[~np.isin(order, rows)]
        for x in KS:
            got[x].append(len(set(order[:x].tolist()) & set(targets)) / len(targets))
    return [statistics.mean(got[x]) for x in KS]


def cases_of(repo: str) -> dict[str, list[tuple[dict[str, Array], list[int], list[int]]]]:
    index, files = data.ablate_index(repo)
    tree = data.tree(repo)
    jobs = _jobs(tree, data.queries(repo, set(files)), files)
    graph = index.tags._graph
    whole = trivial.BM25(tree, files)  # the BM25 baseline's, over each file's whole text
    at = np.array([graph.table.row(f) for f in files], dtype=object)
    out: dict[str, list[Any]] = {"file": [], "task": []}
    for j in jobs:
        scores, rows, _ = components(graph, j)
        asked = (tree / j["files"][0]).read_text("utf-8", "replace") if j["files"] else j["text"]
        scores["whole"] = np.zeros(len(graph.table.paths))
        for row, score in zip(at, whole.scores(asked), strict=True):
            if row is not None:
                scores["whole"][row] = score
        targets = [r for p in j["targets"] if (r := graph.table.row(p)) is not None]
        out[j["kind"]].append((scores, rows, targets))
    return out


Candidate = tuple[dict[str, float], float, dict[str, float]]  # weights, K, the scaled part


def candidates(kind: str) -> list[Candidate]:
    """The grid: BM25's weight 1, the others' 0 .. 1 (the folder's only with focus files,
    `names`: the names-only BM25 as a signal of its own), K 4 .. 60, or -1: each score over
    its best, summed (not reciprocal ranks)."""
    grid = [0.0, 0.25, 0.5, 1.0]
    folders = [0.0, 0.1, 0.25, 0.5, 1.0] if kind == "file" else [0.0]
    out = []
    for g, f, nr, nm, k in itertools.product(grid, folders, grid, [0.0, 0.25, 0.5],
                                             (4.0, 8.0, 16.0, 30.0, 60.0, -1.0)):  # fmt: skip
        out.append(({"lexical": 1.0, "graph": g, "folder": f, "near": nr, "names": nm}, k, {}))
    return out


def whole_candidates(kind: str) -> list[Candidate]:
    """With `whole` (BM25 over each file's whole text, the baseline's; core keeps no such
    index): its weight 0.25 .. 1 beside BM25 of names 0.5 or 1, the edges and the folder."""
    out = []
    for w, lx, nr, f, k in itertools.product((0.25, 0.5, 1.0), (0.5, 1.0), (0.25, 0.5, 1.0),
                                             (0.0, 0.1, 0.25) if kind == "file" else (0.0,),
                                             (8.0, 16.0, 30.0, -1.0)):  # fmt: skip
        out.append(({"whole": w, "lexical": lx, "near": nr, "folder": f}, k, {}))
    return out


def said_candidates(kind: str) -> list[Candidate]:
    """With `said` (core's, a file focus's query cut) or `said_all` (uncut): its weight 0.25 ..
    1 beside BM25 of names (with or without the words), the edges and the folder."""
    out = []
    saids = ("said", "said_all") if kind == "file" else ("said",)
    for s, w, base, lx, nr, f, k in itertools.product(saids, (0.25, 0.5, 1.0),
                                                      ("names", "lexical"), (0.5, 1.0),
                                                      (0.25, 0.5, 1.0),
                                                      (0.0, 0.1) if kind == "file" else (0.0,),
                                                      (8.0, 16.0, 30.0)):  # fmt: skip
        out.append(({s: w, base: lx, "near": nr, "folder": f}, k, {}))
    return out


def scaled_candidates(kind: str) -> list[Candidate]:
    """core's reciprocal ranks (main's weights and K) with a scaled part: each signal's score
    over its best, the leading signal's (a text: `lexical`; a file: `said`) times 0.02 .. 1,
    the others' a share of that."""
    from tokend.core.repomap.fusion import FILE_FUSION, TEXT_FUSION

    rule, lead, other = (FILE_FUSION, "said", "lexical") if kind == "file" else (TEXT_FUSION,
                                                                                 "lexical", "said")  # fmt: skip
    out = []
    for scale, b, c in itertools.product((0.02, 0.1, 1.0), (0.0, 0.25, 0.5, 0.75, 1.0),
                                         (0.0, 0.1, 0.25, 0.5)):  # fmt: skip
        out.append((dict(rule.weights), rule.k, {lead: scale, other: scale * b, "near": scale * c}))
    return out


def alone(kind: str) -> list[tuple[str, dict[str, float], float]]:
    """Each signal ranked alone (ties: the graph's rank, as core's)."""
    names = ["lexical", "said", "said_all", "whole", "near", "graph", "names"] + (
        ["folder"] if kind == "file" else []
    )
    return [(f"{n} alone", {n: 1.0}, 60.0) for n in names]


def _label(weights: dict[str, float], k: float, scaled: dict[str, float] | None = None) -> str:
    parts = ", ".join(f"{n} {w:g}" for n, w in sorted(weights.items()) if w)
    lifts = ", ".join(f"{n} {w:g}" for n, w in sorted((scaled or {}).items()) if w)
    return (
        f"{parts}; " + ("linear" if k < 0 else f"K {k:g}") + (f"; scaled {lifts}" if lifts else "")
    )


def _row(name: str, got: list[float]) -> str:
    return f"| {name} | " + " | ".join(f"{g:.3f}" for g in got) + " |"


def _mean(cases: dict[str, Any], repos: list[str], kind: str, weights: dict[str, float],
          k: float, scaled: dict[str, float] | None = None) -> list[float]:  # fmt: skip
    per = [recalls(cases[r][kind], weights, k, scaled) for r in repos]
    return [statistics.mean(p[i] for p in per) for i in range(len(KS))]


def _best(cases: dict[str, Any], repos: list[str], kind: str, grid: list[Candidate],
          count: int) -> list[Any]:  # fmt: skip
    """The `count` best of the grid by the mean: (row, weights, K, scaled) each."""
    scored = []
    for i, (weights, k, scaled) in enumerate(grid):
        mean = _mean(cases, repos, kind, weights, k, scaled)
        scored.append((-statistics.mean(mean), i, _row(_label(weights, k, scaled), mean)))
    return [(row, *grid[i]) for _, i, row in sorted(scored)[:count]]


def _header(tuning: list[str], want_held: bool, every: bool) -> str:
    return (
        "### repomap_fit: the fusion's weights, chosen on the tuning repositories\n\n"
        f"Tuning: {', '.join(f'{r} {data.REPOS[r][0][:7]}' for r in tuning)}; recall at "
        "1 / 3 / 5 / 10 of the ranked files (bench.repomap_eval's queries), mean over the tuning "
        "repositories. Rows: each signal ranked alone; "
        + (
            f"the best 5 of {len(candidates('file'))} file and {len(candidates('task'))} task "
            "candidates of core's signals by the mean of the four; the best 3 with `whole` (BM25 "
            "over each file's whole text, as the BM25 baseline: core keeps no index of it); the "
            "best 5 with `said` or `said_all`; "
            if every
            else ""
        )
        + f"the best 5 of {len(scaled_candidates('file'))} candidates with a scaled part "
        "(core's reciprocal ranks and each signal's score over its best); `before` (main "
        "46d4bc5's fusion), `now` (core.repomap.fusion's) and the best scaled, per tuning "
        "repository"
        + (
            " and, REPOMAP_FIT_HELD=1, per held-out one (read after the choice)."
            if want_held
            else "."
        )  # fmt: skip
        + "\n"
    )


def run() -> str:
    """REPOMAP_FIT_ALL=1: the earlier passes' grids too (minutes more on twelve trees)."""
    from tokend.core.repomap.fusion import FILE_FUSION, TEXT_FUSION

    tuning = [r for r, (_, role) in data.REPOS.items() if role.startswith("tuning")]
    held = [r for r, (_, role) in data.REPOS.items() if role.startswith("held-out")]
    want_held = os.environ.get("REPOMAP_FIT_HELD") == "1"
    every = os.environ.get("REPOMAP_FIT_ALL") == "1"
    cases = {r: cases_of(r) for r in tuning + (held if want_held else [])}
    before: dict[str, Candidate] = {  # main 46d4bc5, before issue 24's ninth pass
        "file": ({"lexical": 0.5, "near": 1.0, "said": 1.0}, 16.0, {}),
        "task": ({"lexical": 1.0, "near": 0.5, "said": 0.5}, 8.0, {}),
    }
    now = {"file": (FILE_FUSION.weights, FILE_FUSION.k, FILE_FUSION.scaled),
           "task": (TEXT_FUSION.weights, TEXT_FUSION.k, TEXT_FUSION.scaled)}  # fmt: skip
    lines = [_header(tuning, want_held, every)]
    for kind in ("file", "task"):
        lines += [f"\n**{kind} queries**\n", "| fusion | R@1 | R@3 | R@5 | R@10 |",
                  "|---|---:|---:|---:|---:|"]  # fmt: skip
        lines += [_row(n, _mean(cases, tuning, kind, w, k)) for n, w, k in alone(kind)]
        if every:
            for grid, count in ((candidates(kind), 5), (whole_candidates(kind), 3),
                                (said_candidates(kind), 5)):  # fmt: skip
                lines += [row for row, *_ in _best(cases, tuning, kind, grid, count)]
        scaled = _best(cases, tuning, kind, scaled_candidates(kind), 5)
        lines += [row for row, *_ in scaled]
        sides = {"before": before[kind], "now": now[kind], "best scaled": tuple(scaled[0][1:])}
        for name, (weights, k, lift) in sides.items():
            lines.append(_row(f"{name}: {_label(weights, k, lift)}, tuning mean",
                              _mean(cases, tuning, kind, weights, k, lift)))  # fmt: skip
            for r in tuning + (held if want_held else []):
                lines.append(_row(f"{name}: {r}", recalls(cases[r][kind], weights, k, lift)))
        print("\n".join(lines), file=sys.stderr)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
