"""Issue 24's twenty-first pass: a file focus's `cochange` signal (core.repomap.cochange), measured
on the tuning trees' own histories before it was fused.

Each tuning tree's queries are bench.repomap_margin's kept arrays (core's signals as fused for
each query); the history is the pinned repository's, read only up to the first parent of the
tree's oldest query (bench.repomap_eval_data.history: no query's commit is read). A variant of
the signal is made from those commits here, by arithmetic of its own (not core's code), and
fused with core's other signals at a weight and K; each line gives the mean of R@1..10 over the
tuning trees beside the fusion without the signal, and the groups (bench.repomap_refit) up and
down, trees and cells down.

Variants: a commit's largest size that counts (12, 20, 30, 50 of the tree's files); what a
commit gives a pair (`count`: 1; `size`: 1 / (n - 1); `sqrt`, `lift`: a count over the square
root of, or over, how often the other file changed); older commits weighing less (`decay`: a
commit's weight halves every so many commits).

`python -m bench.repomap_cochange` (REPOMAP_EVAL_GIT: the repositories' git dirs).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

import numpy as np

from bench import repomap_eval_data as data
from bench import repomap_margin as margin
from bench.repomap_margin_misses import edges_of

Array = Any
Variant = tuple[int, str, int]  # (largest commit, share, decay: 0 none)
VARIANTS: list[Variant] = [(30, "count", 0), (12, "count", 0), (30, "sqrt", 0), (30, "lift", 0),
                           (30, "size", 0), (30, "size", 500), (12, "size", 1000), (12, "size", 0),
                           (20, "size", 0), (50, "size", 0)]  # fmt: skip
FUSED = [(0.125, 1.0), (0.125, 4.0), (0.25, 2.0), (0.25, 4.0), (0.25, 16.0), (0.5, 16.0),
         (1.0, 60.0), (2.0, 16.0)]  # fmt: skip


def commits(repo: str, paths: list[str]) -> list[list[str]]:
    """The tree's history up to its oldest query's first parent (newest first): each commit's
    changed paths (bench.repomap_eval_data.history_commits)."""
    return data.history_commits(repo, data.history(repo, data.queries(repo, set(paths))))


def signal(paths: list[str], history: list[list[str]], focus: list[int], v: Variant) -> list[Array]:
    """Each focus row's variant scores (a file focus's query each)."""
    largest, share, decay = v
    row = {p: i for i, p in enumerate(paths)}
    pair: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    alone = np.zeros(len(paths))
    for at, names in enumerate(history):
        rows = sorted({row[n] for n in names if n in row})
        if not 2 <= len(rows) <= largest:
            continue
        weight = 0.5 ** (at / decay) if decay else 1.0
        each = weight / (len(rows) - 1) if share == "size" else weight
        for a in rows:
            alone[a] += weight
            for b in rows:
                if a != b:
                    pair[a][b] += each
    out = []
    for f in focus:
        score = np.zeros(len(paths))
        for b, k in pair[f].items():
            score[b] = k / {"sqrt": np.sqrt(alone[b]), "lift": alone[b]}.get(share, 1.0)
        out.append(np.round(score, 12))
    return out


def run() -> str:
    from tokend.core.repomap.fusion import FILE_FUSION, Fusion

    cases = {r: [c for c in got if c["kind"] == "file"] for r, got in margin.load_all().items()}
    without = Fusion({k: w for k, w in FILE_FUSION.weights.items() if k != "cochange"},
                     FILE_FUSION.k, dict(FILE_FUSION.scaled))  # fmt: skip
    base = margin.tree_means(cases, "file", without)
    lines = [f"{len(cases)} tuning trees; a file focus", "",
             "| variant | weight, K | mean R@1..10 (R@1 / 3 / 5 / 10) and against no history |",
             "|---|---|---|", f"| none | - | {margin.summary(base)} |"]  # fmt: skip
    logs = {r: commits(r, edges_of(r)["paths"]) for r in cases}
    for v in VARIANTS:
        made = {}
        for r, got in cases.items():
            got_signal = signal(edges_of(r)["paths"], logs[r], [c["rows"][0] for c in got], v)
            made[r] = [dict(c, scores=dict(c["scores"], cochange=s))
                       for c, s in zip(got, got_signal, strict=True)]  # fmt: skip
        for w, k in FUSED:
            fusion = Fusion(dict(without.weights, cochange=w), without.k, dict(without.scaled),
                            {"cochange": k})  # fmt: skip
            got_means = margin.tree_means(made, "file", fusion)
            label = f"at most {v[0]} files, {v[1]}" + (f", halving every {v[2]}" if v[2] else "")
            lines.append(f"| {label} | {w}, {k:g} | {margin.summary(got_means, base)} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
