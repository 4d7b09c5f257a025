"""A file focus's fusion (issue 24's tenth pass): which of the signals the baselines that beat
it carry earn their place, chosen on the tuning repositories only (bench.repomap_eval_data's
`tuning` roles, fifteen trees), in bench.repomap_fit's way.

The signals' score arrays of every file query (bench.repomap_fit.components, and `whole`, the
BM25 baseline's score over each file's whole text, which core keeps no index of) are worked out
once per tree and kept under bench/out/eval (fitfile-*.pkl); each candidate fusion is then
scored on them: recall at 1, 3, 5, 10 of the ranked files, no map rendered. `same`: 1 for a
file of the focus file's own folder (the same-folder baseline's first files), else 0; `stem`:
core.repomap.stem's score (the file name's words), worked out when the arrays are read.
REPOMAP_FIT_HELD=1 adds the held-out rows of the chosen fusion (read after the choice).
"""

from __future__ import annotations

import itertools
import os
import pickle
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import repomap_eval_data as data
from bench.repomap_eval import KS

Array = Any
Case = tuple[dict[str, Array], list[int], list[int]]
Candidate = tuple[dict[str, float], float, dict[str, float]]  # weights, K, the scaled part


def file_cases(repo: str, kind: str = "file") -> list[Case]:
    """The file (or `task`: text) queries' score arrays of `repo` (kept by its pin), and `stem`
    (core.repomap.stem, worked out on load: a change of it needs no new arrays)."""
    from bench.repomap_fit import cases_of
    from tokend.core.repomap.stem import name_terms, stem

    slug = f"{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"
    kept = data.OUT / f"fit{kind}-{slug}"
    if kept.exists():
        with kept.open("rb") as f:
            cases: list[Case] = pickle.load(f)
    else:
        both = cases_of(repo)
        for got in both.values():
            for scores, _, _ in got:
                scores["same"] = (scores["folder"] >= 1.0).astype(float)
        for name, got in both.items():
            if not (data.OUT / f"fit{name}-{slug}").exists():
                with (data.OUT / f"fit{name}-{slug}").open("wb") as f:
                    pickle.dump(got, f)
        cases = both[kind]
    names = name_terms(paths_of(repo))
    for scores, rows, _ in cases:
        scores["stem"] = stem(*names, rows)
    return cases


def paths_of(repo: str) -> list[str]:
    """The tagged files of `repo` in row order (the fit's index, kept by its pin)."""
    kept = data.OUT / f"fitpaths-{repo.replace('/', '+')}-{data.REPOS[repo][0][:12]}.pkl"
    if kept.exists():
        with kept.open("rb") as f:
            return pickle.load(f)  # type: ignore[no-any-return]
    index, _ = data.ablate_index(repo)
    paths = list(index.tags._graph.table.paths)
    with kept.open("wb") as f:
        pickle.dump(paths, f)
    return paths


if __name__ == "__main__" and sys.argv[1:2] == ["paths"]:
    for repo in sys.argv[2:]:
        print(repo, len(paths_of(repo)), flush=True)

if __name__ == "__main__" and sys.argv[1:2] == ["cache"]:
    for repo in sys.argv[2:]:
        file_cases(repo, "task")
        print(repo, "kept", flush=True)


class Prepared:
    """One query's arrays made once: each signal's rank (ties sharing the better), where it has
    evidence, and its score over its best (core.repomap.fusion's two parts)."""

    def __init__(self, case: Case) -> None:
        from tokend.core.repomap.fusion import ranks

        scores, rows, targets = case
        self.n = len(scores["graph"])
        self.rank = {s: ranks(v) for s, v in scores.items()}
        self.has = {s: v > 0 for s, v in scores.items()}
        self.over = {}
        for s, v in scores.items():
            top = float(v.max()) if self.n else 0.0
            self.over[s] = np.maximum(v, 0.0) / top if top > 0 else np.zeros(self.n)
        self.graph = scores["graph"]
        self.rows = rows
        self.targets = set(targets)

    def recall(self, cand: Candidate) -> list[float]:
        weights, k, scaled = cand
        total = np.zeros(self.n)
        for name in sorted(set(weights) | set(scaled)):
            if name not in self.rank:
                continue
            if weights.get(name):
                total += np.where(self.has[name], weights[name] / (k + self.rank[name]), 0.0)
            if scaled.get(name):
                total += scaled[name] * self.over[name]
        total = np.round(total, 12)
        order = np.lexsort((np.arange(self.n), -self.graph, -total))
        order = order[: 10 + len(self.rows)]
        order = order[~np.isin(order, self.rows)]
        return [len(set(order[:x].tolist()) & self.targets) / len(self.targets) for x in KS]


def mean_recall(
    prepared: dict[str, list[Prepared]], repos: list[str], cand: Candidate
) -> list[float]:
    """The mean over `repos` of each repository's mean recall at k."""
    per = []
    for r in repos:
        got = [p.recall(cand) for p in prepared[r]]
        per.append([statistics.mean(g[i] for g in got) for i in range(len(KS))])
    return [statistics.mean(p[i] for p in per) for i in range(len(KS))]


CORE = ("lexical", "said", "near", "folder", "same", "names", "graph", "stem")  # core can work out
STEPS = {"weight": (0.0, 0.1, 0.25, 0.5, 1.0, 2.0), "scaled": (0.0, 0.005, 0.01, 0.02, 0.05, 0.1)}
KS_TRIED = (4.0, 8.0, 16.0, 30.0, 60.0)


def groups(tuning: list[str]) -> list[list[str]]:
    """The tuning trees by when they joined: the first six, the six held out until the ninth
    pass, the three held out in it."""
    first = [r for r in tuning if data.REPOS[r][1] == "tuning"]
    was = [r for r in tuning if r not in first]
    return [first, was[:6], was[6:]]


def search(prepared: dict[str, list[Prepared]], tuning: list[str], start: Candidate,
           signals: tuple[str, ...] = CORE) -> tuple[Candidate, list[str]]:  # fmt: skip
    """One weight (or K) at a time from `start`, a move kept when it raises the mean of R@1..10
    over all the tuning trees and over at least two of the three groups (climb); until no move
    does."""
    parts = groups(tuning)

    def score(c: Candidate) -> tuple[float, list[float]]:
        means = [statistics.mean(mean_recall(prepared, g, c)) for g in parts]
        return statistics.mean(
            statistics.mean(mean_recall(prepared, [r], c)) for r in tuning
        ), means

    return climb(start, signals, STEPS, score)


def climb(start: Candidate, signals: tuple[str, ...], steps: dict[str, tuple[float, ...]],
          score: Callable[[Candidate], tuple[float, list[float]]]) -> tuple[Candidate, list[str]]:  # fmt: skip
    """From `start`, one weight, scaled part (`steps`) or K at a time; a move is kept when it
    raises `score`'s mean over all the trees and the mean of most of its groups; until no move
    does. The best and the moves' log."""
    best = (dict(start[0]), start[1], dict(start[2]))
    best_all, best_parts = score(best)
    log = [
        f"start {label(best)}: {best_all:.4f} (groups {', '.join(f'{m:.4f}' for m in best_parts)})"
    ]
    moved = True
    while moved:
        moved = False
        tries: list[Candidate] = [(best[0], k, best[2]) for k in KS_TRIED if k != best[1]]
        for s, (part, values) in itertools.product(signals, steps.items()):
            for v in values:
                w, sc = dict(best[0]), dict(best[2])
                (w if part == "weight" else sc)[s] = v
                if (w, sc) != (best[0], best[2]):
                    tries.append((w, best[1], sc))
        for cand in tries:
            got, got_parts = score(cand)
            ups = sum(g > b + 1e-9 for g, b in zip(got_parts, best_parts, strict=True))
            if got > best_all + 1e-9 and ups > len(got_parts) // 2:
                log.append(f"{label(cand)}: {best_all:.4f} -> {got:.4f} (groups "
                           f"{', '.join(f'{m:.4f}' for m in got_parts)})")  # fmt: skip
                best, best_all, best_parts, moved = cand, got, got_parts, True
                print(log[-1], file=sys.stderr, flush=True)
                break  # the next moves from the new best
    return best, log


def label(cand: Candidate) -> str:
    weights, k, scaled = cand
    parts = ", ".join(f"{n} {w:g}" for n, w in sorted(weights.items()) if w)
    lifts = ", ".join(f"{n} {w:g}" for n, w in sorted(scaled.items()) if w)
    return f"{parts}; K {k:g}" + (f"; scaled {lifts}" if lifts else "")


def row(name: str, got: list[float]) -> str:
    return f"| {name} | " + " | ".join(f"{g:.3f}" for g in got) + " |"


BEFORE: Candidate = ({"lexical": 0.5, "near": 1.0, "said": 1.0}, 16.0, {})  # main bb60663's
ALONE = ("lexical", "said", "said_all", "whole", "near", "graph", "names", "folder", "same", "stem")


def _without(cand: Candidate, name: str) -> Candidate:
    weights, k, scaled = cand
    return ({n: w for n, w in weights.items() if n != name}, k,
            {n: w for n, w in scaled.items() if n != name})  # fmt: skip


def run() -> str:
    """REPOMAP_FIT_SEARCH=1: the search from main's fusion too (minutes on fifteen trees)."""
    from tokend.core.repomap.fusion import FILE_FUSION

    tuning = [r for r, (_, role) in data.REPOS.items() if role.startswith("tuning")]
    held = [r for r, (_, role) in data.REPOS.items() if role.startswith("held-out")]
    want_held = os.environ.get("REPOMAP_FIT_HELD") == "1"
    repos = tuning + (held if want_held else [])
    prepared = {r: [Prepared(c) for c in file_cases(r)] for r in repos}
    now: Candidate = (dict(FILE_FUSION.weights), FILE_FUSION.k, dict(FILE_FUSION.scaled))
    lines = [
        "#### repomap_fit_file: a file focus's fusion, chosen on the fifteen tuning trees\n",
        "| fusion | R@1 | R@3 | R@5 | R@10 |", "|---|---:|---:|---:|---:|",
    ]  # fmt: skip
    lines += [row(f"{s} alone", mean_recall(prepared, tuning, ({s: 1.0}, 60.0, {}))) for s in ALONE]
    sides = {"before (main bb60663)": BEFORE, "now": now,
             "now without stem": _without(now, "stem"),
             "now without the scaled part": (now[0], now[1], {}),
             "now, before's weights and K with stem": ({**BEFORE[0], "stem": now[0]["stem"]},
                                                       BEFORE[1], {})}  # fmt: skip
    for extra in ("folder", "same", "names"):
        sides[f"now with {extra} 0.1"] = ({**now[0], extra: 0.1}, now[1], now[2])
    for name, cand in sides.items():
        lines.append(
            row(f"{name}: {label(cand)}, tuning mean", mean_recall(prepared, tuning, cand))
        )
    for part, group in zip(("first six", "six (was held-out, 8th)", "three (was held-out, 9th)"),
                           groups(tuning), strict=True):  # fmt: skip
        for name in ("before (main bb60663)", "now"):
            lines.append(row(f"{name}: {part}", mean_recall(prepared, group, sides[name])))
    for r in repos:
        for name in ("before (main bb60663)", "now"):
            lines.append(
                row(f"{name}: {r} ({data.REPOS[r][1]})", mean_recall(prepared, [r], sides[name]))
            )
    if os.environ.get("REPOMAP_FIT_SEARCH") == "1":
        _, log = search(prepared, tuning, BEFORE)
        lines += ["", "The search from main's fusion (one weight or K at a time):", ""]
        lines += [f"- {line}" for line in log]
    out = "\n".join(lines) + "\n"
    print(out, file=sys.stderr)
    return out


if __name__ == "__main__" and not sys.argv[1:]:
    print(run())
