"""Issue 24's twentieth pass: could a learned fusion, or a rule of agreement, rank better than
core's hand-fitted one? Measured on the tuning trees' kept arrays (bench.repomap_margin keep).

`python -m bench.repomap_learned learned file|task`: a linear fusion learned by pairwise logistic
regression (numpy, full-batch gradient descent on standardized features, L2 1e-3, each tree
weighing the same). Features a signal: its reciprocal rank at K 1, 4, 16 and 60, its score over
its best, and whether it ranks the file first; the signals: lexical, said, stem, near, the file's
whole tokens and the graph's rank (a file focus), or lexical, said, compounds, whole, near and
the graph's rank (a text). Positives: a query's targets; negatives: the 150 best of core's
fusion and each signal's 30 best, targets and focus files left out. Measured leave-one-group-out
(bench.repomap_refit.tuning_groups): trained on the other groups, its order (core's vendored
share and ties as bench.repomap_margin.order) scored on the group left out, beside core's.

`python -m bench.repomap_learned agree file|task`: where the best file (focus left out) of two
or more signals is one and the same file and core's first is another, how often each is a
target.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import numpy as np

from bench import repomap_margin as margin
from bench.repomap_refit import tuning_groups

Array = Any
KS_RR = (1.0, 4.0, 16.0, 60.0)
SIGNALS = {
    "file": ("lexical", "said", "stem", "near", "whole_file", "graph"),
    "task": ("lexical", "said", "compounds", "whole", "near", "graph"),
}
AGREEING = {
    "file": [("lexical", "said", "whole_file"), ("lexical", "whole_file"),
             ("said", "whole_file"), ("lexical", "said")],
    "task": [("lexical", "said", "whole"), ("said", "whole"), ("whole", "compounds"),
             ("lexical", "said")],
}  # fmt: skip


def _fusion(kind: str) -> Any:
    from tokend.core.repomap.fusion import FILE_FUSION, TEXT_FUSION

    return FILE_FUSION if kind == "file" else TEXT_FUSION


def features(scores: dict[str, Array], kind: str) -> Array:
    """Each file's features (rows) from the signals' scores."""
    from tokend.core.repomap.fusion import ranks

    n = len(next(iter(scores.values())))
    cols: list[Array] = []
    for name in SIGNALS[kind]:
        v = scores.get(name)
        if v is None:
            cols += [np.zeros(n)] * (len(KS_RR) + 2)
            continue
        r, evidence, top = ranks(v), v > 0, float(v.max())
        cols += [np.where(evidence, 1.0 / (k + r), 0.0) for k in KS_RR]
        cols.append(np.maximum(v, 0.0) / top if top > 0 else np.zeros(n))
        cols.append(np.where(evidence, (r <= 1).astype(float), 0.0))
    return np.stack(cols, 1)


def _pairs(case: margin.Case, kind: str) -> tuple[Array, Array, Array] | None:
    from tokend.core.repomap.fusion import fused

    targets = [t for t in case["targets"] if t not in case["rows"]]
    if not targets:
        return None
    best = fused(case["scores"], len(case["ties"]), _fusion(kind))
    pool = set(np.argsort(-best)[:150].tolist())
    for name in SIGNALS[kind]:
        if name in case["scores"]:
            pool |= set(np.argsort(-case["scores"][name])[:30].tolist())
    negatives = np.array(sorted(pool - set(targets) - set(case["rows"])))
    return features(case["scores"], kind), np.array(targets), negatives


def fit(prepared: dict[str, list[Any]], trees: list[str], steps: int = 300) -> Array:
    """The weights (on unstandardized features) that minimise the pairwise logistic loss."""
    data = [(p, 1.0 / len(prepared[r]) / len(trees)) for r in trees for p in prepared[r]]
    scale = np.concatenate([p[0] for p, _ in data]).std(0) + 1e-9
    w = np.zeros(len(scale))
    for _ in range(steps):
        grad = 1e-3 * w
        for (x, pos, neg), weight in data:
            xs = x / scale
            diff = (xs[pos] @ w)[:, None] - (xs[neg] @ w)[None, :]
            p = 1.0 / (1.0 + np.exp(np.clip(diff, -50, 50)))
            grad += weight * (xs[pos].T @ -p.sum(1) + xs[neg].T @ p.sum(0)) / p.size
        w -= 0.5 * grad
    return w / scale


def learned(kind: str) -> str:
    from tokend.core.repomap.fusion import Fusion

    groups = tuning_groups()
    cases = {r: [c for c in margin.keep(r) if c["kind"] == kind] for g in groups for r in g}
    prepared = {r: [p for c in cs if (p := _pairs(c, kind))] for r, cs in cases.items()}
    core = margin.tree_means(cases, kind, _fusion(kind))
    got: dict[str, list[float]] = {}
    lines = [f"{kind}, leave one group out ({len(groups)} groups, {len(cases)} trees):", ""]
    for i, group in enumerate(groups):
        w = fit(prepared, [r for g in groups if g is not group for r in g])
        nothing = Fusion({}, 16.0)
        for r in group:
            each = [
                margin.recall(c, nothing, lambda s, w=w: features(s, kind) @ w) for c in cases[r]
            ]
            got[r] = [statistics.mean(e[k] for e in each) for k in range(len(each[0]))]
        core_mean, got_mean = (statistics.mean(statistics.mean(per[r]) for r in group)
                               for per in (core, got))  # fmt: skip
        lines.append(f"- group {i}: core {core_mean:.4f}, learned {got_mean:.4f}")
    lines += ["", f"core {margin.summary(core)}", f"learned {margin.summary(got, core)}"]
    return "\n".join(lines)


def agree(kind: str) -> str:
    counts = {s: [0, 0, 0] for s in AGREEING[kind]}  # disagreements, agreed a target, core's
    for group in tuning_groups():
        for repo in group:
            for case in (c for c in margin.keep(repo) if c["kind"] == kind):
                first, targets = int(margin.order(case, _fusion(kind))[0]), set(case["targets"])
                best = {}
                for name, v in case["scores"].items():
                    v = v.copy()
                    v[case["rows"]] = -1.0
                    top = np.flatnonzero(v == v.max())
                    if v.max() > 0 and len(top) == 1:
                        best[name] = int(top[0])
                for names, c in counts.items():
                    picks = {best.get(n, -1 - i) for i, n in enumerate(names)}
                    if len(picks) == 1 and (u := picks.pop()) >= 0 and u != first:
                        c[0], c[1], c[2] = (
                            c[0] + 1,
                            c[1] + (u in targets),
                            c[2] + (first in targets),
                        )
    return "\n".join(f"- {' = '.join(s)}: {c[0]} queries where they agree on another first file "
                     f"than core's; theirs a target in {c[1]}, core's in {c[2]}"
                     for s, c in counts.items())  # fmt: skip


if __name__ == "__main__":
    print({"learned": learned, "agree": agree}[sys.argv[1]](sys.argv[2]))
