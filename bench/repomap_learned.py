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

`python -m bench.repomap_learned lambdamart file|task`: LambdaMART (LightGBM's lambdarank; `pip
install lightgbm` first: a measurement only, not a dependency) stacked on core's fusion: the
features above and core's fused score (over its best, its reciprocal rank) and the graph's rank;
a query's candidates are the pool above (at training its targets added), the rest ordered after
them by core; leave-one-group-out as above, two sizes of model (LAMBDAMART).

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
from bench.repomap_eval import KS
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
    from tokend.core.repomap.fusion import fusion_for

    return fusion_for(files=kind == "file", text=kind == "task")


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
    negatives = np.setdiff1d(_pool(case, kind, best, False), targets)
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


LAMBDAMART = {  # label: (rounds, leaves, least queries' files a leaf)
    "200 rounds, 15 leaves, 50 a leaf": (200, 15, 50),
    "100 rounds, 7 leaves, 200 a leaf": (100, 7, 200),
}


def _stacked(case: margin.Case, kind: str) -> tuple[Array, Array]:
    """The case's features with core's fused score and the graph's rank beside them, and core's
    fused score."""
    from tokend.core.repomap.fusion import fused, ranks

    core = fused(case["scores"], len(case["ties"]), _fusion(kind))
    top = float(core.max())
    extra = [
        core / top if top > 0 else core,
        1.0 / (1 + ranks(core)),
        np.log1p(ranks(case["ties"])),
    ]
    return np.column_stack([features(case["scores"], kind), *extra]), core


def _pool(case: margin.Case, kind: str, core: Array, targets: bool) -> Array:
    """A query's candidates: core's 150 best and each signal's 30 best (with its targets when
    `targets`), focus files left out, sorted."""
    pool = set(np.argsort(-core)[:150].tolist())
    for name in SIGNALS[kind]:
        if name in case["scores"]:
            pool |= set(np.argsort(-case["scores"][name])[:30].tolist())
    return np.array(sorted((pool | set(case["targets"]) if targets else pool) - set(case["rows"])))


def _ranked(case: margin.Case, x: Array, core: Array, pool: Array, model: Any) -> list[int]:
    from tokend.core.repomap.choice import RANK_DECIMALS
    from tokend.core.repomap.vendored import demoted

    n = len(case["ties"])
    total = np.full(n, -1e9) + core * 1e-6  # the rest after the pool, in core's order
    total[pool] = model.predict(x[pool])
    total = demoted(total - total.min() + 1.0, lambda: case["vendored"], case["rows"], case["text"])
    got = np.lexsort((np.arange(n), -case["ties"], -np.round(total, RANK_DECIMALS)))
    return got[~np.isin(got, case["rows"])][:10].tolist()  # type: ignore[no-any-return]


def lambdamart(kind: str) -> str:
    import lightgbm

    groups = tuning_groups()
    cases = {r: [c for c in margin.keep(r) if c["kind"] == kind] for g in groups for r in g}
    stacked = {r: [_stacked(c, kind) for c in cs] for r, cs in cases.items()}
    core = margin.tree_means(cases, kind, _fusion(kind))
    lines = [f"{kind}, leave one group out ({len(groups)} groups, {len(cases)} trees):", "",
             f"- core {margin.summary(core)}"]  # fmt: skip
    for label, (rounds, leaves, least) in LAMBDAMART.items():
        got: dict[str, list[float]] = {}
        for group in groups:
            xs, ys, sizes = [], [], []
            for r in (r for g in groups if g is not group for r in g):
                for c, (x, fused_) in zip(cases[r], stacked[r], strict=True):
                    if set(c["targets"]) - set(c["rows"]):
                        pool = _pool(c, kind, fused_, True)
                        xs.append(x[pool])
                        ys.append(np.isin(pool, c["targets"]).astype(int))
                        sizes.append(len(pool))
            params = {"objective": "lambdarank", "learning_rate": 0.05, "num_leaves": leaves,
                      "min_data_in_leaf": least, "bagging_fraction": 0.8, "bagging_freq": 1,
                      "feature_fraction": 0.8, "lambdarank_truncation_level": 20, "seed": 0,
                      "verbose": -1, "num_threads": 1, "deterministic": True}  # fmt: skip
            data = lightgbm.Dataset(np.concatenate(xs), np.concatenate(ys), group=sizes)
            model = lightgbm.train(params, data, num_boost_round=rounds)
            for r in group:
                each = []
                for c, (x, fused_) in zip(cases[r], stacked[r], strict=True):
                    top = _ranked(c, x, fused_, _pool(c, kind, fused_, False), model)
                    want = len(c["paths_targets"])
                    each.append([len(set(top[:k]) & set(c["targets"])) / want for k in KS])
                got[r] = [statistics.mean(e[i] for e in each) for i in range(len(KS))]
        lines.append(f"- LambdaMART, {label}: {margin.summary(got, core)}")
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
    print({"learned": learned, "lambdamart": lambdamart, "agree": agree}[sys.argv[1]](sys.argv[2]))
