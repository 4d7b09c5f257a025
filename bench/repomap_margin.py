"""Issue 24's eighteenth pass: a text's `whole` signal with a margin, measured on the tuning trees.

Each tuning tree's index is built once (in process, its tags kept in bench/out/eval's ablate
caches) and every query of bench.repomap_eval (a file focus and a task's text a commit) is
ranked by core as it is (RepoGraph._scored), its signals' score arrays kept as core fused them
(bench/out/eval/margin-*.pkl): each candidate fusion is then the same rank with other weights,
K or scaled parts (core.repomap.fusion.fused, the vendored share, the graph's rank for ties,
focus files left out), recall at 1, 3, 5, 10 of the ranked files, no map rendered.

`python -m bench.repomap_margin keep [REPO ...]`: the arrays of the tuning trees (or REPOs).
`python -m bench.repomap_margin search`: a text's `whole` given a margin (its score over its
best, scaled, beside or instead of its reciprocal rank; that share to a power; its lead over the
2nd, 4th or 11th best; its z-score), its weight and K again; a file focus's whole tokens
(`whole_file`: the focus file's against every file's, BM25 as a text's `whole`); `near` times
the IDF of a file's in-degree (bench/out/eval/marginedges-*.pkl: the graph's rows). Each
candidate's mean of R@1..10 over the tuning trees beside main's fusion, and how many of
bench.repomap_refit's groups, trees and (tree, k) cells it raises or lowers.
`python -m bench.repomap_margin misses REPO [file|task]`: each query's targets, their ranks in
the map and in the BM25 baseline, and the signals' ranks of each target.
"""

from __future__ import annotations

import pickle
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import repomap_eval_data as data
from bench.repomap_eval import KS, _jobs
from bench.repomap_margin_misses import edges_of, misses
from bench.repomap_refit import tuning_groups

Array = Any
Case = dict[str, Any]  # kind, scores, rows, targets, ties, vendored, text, file


def _kept(repo: str) -> Path:
    return data.OUT / f"margin-{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"


def keep(repo: str) -> list[Case]:
    """The tree's queries' arrays (kept by its pin)."""
    if _kept(repo).exists():
        with _kept(repo).open("rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]
    from tokend.core.repomap import fusion as fusions
    from tokend.core.repomap import graph as graphs

    index, files = data.ablate_index(repo)
    tree = data.tree(repo)
    jobs = _jobs(tree, data.queries(repo, set(files)), files)
    graph = index.tags._graph
    seen: list[dict[str, Array]] = []
    real = fusions.fused

    def caught(scores: dict[str, Array], n: int, fusion: Any = fusions.FILE_FUSION) -> Array:
        seen.append(dict(scores))
        return real(scores, n, fusion)

    graphs.fusions.fused = caught  # type: ignore[attr-defined]
    out: list[Case] = []
    try:
        for j in jobs:
            focus = graphs.Focus(frozenset(j["files"]), frozenset(), j.get("text", ""))
            if j["kind"] == "task":
                focus = replace(focus, identifiers=graphs.identifiers_in(j["text"], graph.defines))
            seen.clear()
            graph_rank, _ = graph._scored(focus)
            rows = sorted(graph._focus_rows(focus))
            scores = seen[0]
            if rows:  # a file focus: its whole tokens against every file's (measured)
                from tokend.core.repomap.said import said_scores

                ids = np.unique(graph.whole.row_ids(rows[0]).astype(np.int64))
                scores["whole_file"] = said_scores(graph.whole, len(graph.paths), [], ids)
            targets = [r for p in j["targets"] if (r := graph.table.row(p)) is not None]
            out.append({"kind": j["kind"], "scores": scores, "rows": rows, "targets": targets,
                        "ties": np.round(graph_rank, 12), "text": j.get("text", ""),
                        "file": j["files"][0] if j["files"] else "",
                        "paths_targets": j["targets"]})  # fmt: skip
    finally:
        graphs.fusions.fused = real  # type: ignore[attr-defined]
    flags = graph._paths_terms().vendored
    for case in out:
        case["vendored"] = flags
    with _kept(repo).open("wb") as f:
        pickle.dump(out, f)
    return out


def order(case: Case, fusion: Any, extra: Any = None) -> Array:
    """Core's file order of the case with `fusion` (focus files left out); `extra`: a function
    of the scores giving a term added to the fused score (a candidate core has no field for)."""
    from tokend.core.repomap.choice import RANK_DECIMALS
    from tokend.core.repomap.fusion import fused
    from tokend.core.repomap.vendored import demoted

    scores, rows = case["scores"], case["rows"]
    n = len(case["ties"])
    total = fused(scores, n, fusion)  # (a signal the fusion does not weigh adds nothing)
    if extra is not None:
        total = total + extra(scores)
    total = np.round(demoted(total, lambda: case["vendored"], rows, case["text"]), RANK_DECIMALS)
    got = np.lexsort((np.arange(n), -case["ties"], -total))
    return got[~np.isin(got, rows)]


def recall(case: Case, fusion: Any, extra: Any = None) -> list[float]:
    got, targets = order(case, fusion, extra)[:10].tolist(), set(case["targets"])
    want = len(case["paths_targets"])
    return [len(set(got[:x]) & targets) / want for x in KS]


def tree_means(cases: dict[str, list[Case]], kind: str, fusion: Any,
               extra: Any = None) -> dict[str, list[float]]:  # fmt: skip
    """Each tree's mean recall at k of its `kind` queries."""
    out = {}
    for repo, got in cases.items():
        each = [recall(c, fusion, extra) for c in got if c["kind"] == kind]
        out[repo] = [statistics.mean(e[i] for e in each) for i in range(len(KS))]
    return out


def summary(per: dict[str, list[float]], base: dict[str, list[float]] | None = None) -> str:
    groups = tuning_groups()
    mean = statistics.mean(statistics.mean(v) for v in per.values())
    ks = [statistics.mean(v[i] for v in per.values()) for i in range(len(KS))]
    line = f"{mean:.4f} (" + " / ".join(f"{k:.4f}" for k in ks) + ")"
    if base is not None:
        g_now = [statistics.mean(statistics.mean(per[r]) for r in g if r in per) for g in groups]
        g_was = [statistics.mean(statistics.mean(base[r]) for r in g if r in base) for g in groups]
        down = sum(a < b - 1e-12 for a, b in zip(g_now, g_was, strict=True))
        up = sum(a > b + 1e-12 for a, b in zip(g_now, g_was, strict=True))
        cells = sum(a < b - 1e-12 for r in per for a, b in zip(per[r], base[r], strict=True))
        trees = sum(statistics.mean(per[r]) < statistics.mean(base[r]) - 1e-12 for r in per)
        line += f" groups up {up} down {down}; trees down {trees}; cells down {cells}"
    return line


def load_all() -> dict[str, list[Case]]:
    repos = [r for g in tuning_groups() for r in g]
    return {r: keep(r) for r in repos if _kept(r).exists()}


def _variant(
    cases: dict[str, list[Case]], kind: str, signal: str, change: Any
) -> dict[str, list[Case]]:
    """The `kind` cases with `signal`'s scores made again by `change(case, edges)`."""
    out: dict[str, list[Case]] = {}
    for repo, got in cases.items():
        edges = edges_of(repo) if signal == "near" else None
        out[repo] = [dict(c, scores=dict(c["scores"], **{signal: change(c, edges)}))
                     for c in got if c["kind"] == kind and signal in c["scores"]]  # fmt: skip
    return out


def _over_best(power: float, lift: float, name: str = "whole") -> Any:
    """A term: `lift` times each file's score over the best, to the `power`."""

    def term(scores: dict[str, Array]) -> Array:
        v, top = scores[name], float(scores[name].max())
        return lift * (np.maximum(v, 0.0) / top) ** power if top > 0 else np.zeros(len(v))

    return term


def _gap(nth: int, lift: float) -> Any:
    """A term: `lift` times how far a file's `whole` score stands above the (nth+1)th best's,
    over the best (the first file's margin over the next ones)."""

    def term(scores: dict[str, Array]) -> Array:
        v, top = scores["whole"], float(scores["whole"].max())
        if top <= 0:
            return np.zeros(len(v))
        ref = np.sort(v)[::-1][nth] if len(v) > nth else 0.0
        return lift * np.maximum(v - ref, 0.0) / top

    return term


def _z(lift: float) -> Any:
    """A term: `lift` / 10 times a file's `whole` z-score (above the mean only)."""

    def term(scores: dict[str, Array]) -> Array:
        v = scores["whole"]
        sd = float(v.std())
        return lift * np.maximum((v - v.mean()) / sd, 0.0) / 10 if sd > 0 else np.zeros(len(v))

    return term


def _hub_discount(case: Case, edges: Any) -> Array:
    """`near` times the BM25 IDF of each file's in-degree (a file many files refer to is weak
    evidence of belonging with the focus, as a name many files define is)."""
    n = len(case["ties"])
    d = np.bincount(edges["targets"], minlength=n).astype(float)
    return np.round(case["scores"]["near"] * np.log1p((n - d + 0.5) / (d + 0.5)), 12)


def search() -> str:
    """Each candidate beside main's fusion: the mean of R@1..10 over the tuning trees (R@1 / 3 /
    5 / 10), groups up and down (bench.repomap_refit.tuning_groups), trees and cells down."""
    from tokend.core.repomap.fusion import FILE_FUSION, TEXT_FUSION, Fusion

    cases = load_all()
    text = {"whole": TEXT_FUSION.weights["whole"]}

    def with_(
        base: Fusion, w: dict[str, float], sc: dict[str, float], k: dict[str, float]
    ) -> Fusion:
        return Fusion(
            dict(base.weights, **w), base.k, dict(base.scaled, **sc), dict(base.own_k, **k)
        )

    task: list[tuple[str, Fusion, Any]] = []
    for lift in (0.1, 0.25, 0.5, 1.0):
        for w in (0.75, 0.5, 0.0):
            task.append(
                (
                    f"whole scaled {lift}, weight {w}",
                    with_(TEXT_FUSION, {"whole": w}, {"whole": lift}, {}),
                    None,
                )
            )
        for power in (2, 4, 8, 16):
            task.append(
                (f"whole (score / best)^{power} x {lift}", TEXT_FUSION, _over_best(power, lift))
            )
        task.append((f"whole z-score x {lift}", TEXT_FUSION, _z(lift)))
    for nth in (1, 3, 10):
        for lift in (0.25, 0.5, 1.0, 2.0):
            task.append((f"whole margin over #{nth + 1} x {lift}", TEXT_FUSION, _gap(nth, lift)))
    for w in (0.5, 0.75, 1.0, 1.25):
        for k in (0.5, 1.0, 2.0, 4.0):
            if (w, k) != (text["whole"], TEXT_FUSION.own_k["whole"]):
                task.append(
                    (
                        f"whole weight {w}, K {k}",
                        with_(TEXT_FUSION, {"whole": w}, {}, {"whole": k}),
                        None,
                    )
                )
    file: list[tuple[str, Fusion, Any]] = []
    for w, k, lift in ((0.1, 16, 0), (0.25, 16, 0), (0.5, 16, 0), (1.0, 16, 0), (0.25, 4, 0),
                       (0.5, 1, 0), (0, 16, 0.005), (0, 16, 0.01), (0, 16, 0.02)):  # fmt: skip
        file.append((f"whole_file weight {w}, K {k}, scaled {lift}",
                     with_(FILE_FUSION, {"whole_file": w}, {"whole_file": lift}, {"whole_file": k}), None))  # fmt: skip
    lines = [
        f"{len(cases)} tuning trees",
        "",
        "| query | candidate | mean R@1..10 (R@1 / 3 / 5 / 10) and against main |",
        "|---|---|---|",
    ]
    for kind, fusion, tried in (("task", TEXT_FUSION, task), ("file", FILE_FUSION, file)):
        base = tree_means(cases, kind, fusion)
        lines.append(f"| {kind} | main | {summary(base)} |")
        for label, cand, extra in tried:
            lines.append(
                f"| {kind} | {label} | {summary(tree_means(cases, kind, cand, extra), base)} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
        hubs = _variant(cases, kind, "near", _hub_discount)
        lines.append(
            f"| {kind} | near x IDF of in-degree | {summary(tree_means(hubs, kind, fusion), base)} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "keep":
        for repo in sys.argv[2:] or [r for g in tuning_groups() for r in g]:
            print(repo, len(keep(repo)), flush=True)
    elif what == "search":
        print(search())
    elif what == "misses":
        repo = sys.argv[2]
        print(misses(repo, sys.argv[3] if len(sys.argv) > 3 else "file", keep(repo), order))
