"""bench.repomap_fit_file's recall of a candidate fusion, against a plain reference written
here: each signal's rank (1 + the files strictly ahead), weight / (K + rank) where the signal
has evidence, each scaled signal's score over its best, ties by the graph's score then row."""

from __future__ import annotations

import numpy as np
from bench.repomap_eval import KS
from bench.repomap_fit_file import Prepared
from hypothesis import given, settings
from hypothesis import strategies as st

SIGNALS = ("lexical", "said", "near", "stem")


def _by_hand(scores, rows, targets, weights, k, scaled):  # type: ignore[no-untyped-def]
    n = len(scores["graph"])
    total = []
    for i in range(n):
        t = 0.0
        for name in sorted(set(weights) | set(scaled)):
            col = [float(x) for x in scores[name]]
            if weights.get(name) and col[i] > 0:
                rank = 1 + sum(1 for x in col if x > col[i])
                t += weights[name] / (k + rank)
            top = max(col)
            if scaled.get(name) and top > 0:
                t += scaled[name] * max(col[i], 0.0) / top
        total.append(round(t, 12))
    order = sorted(range(n), key=lambda i: (-total[i], -float(scores["graph"][i]), i))
    order = [i for i in order if i not in rows]
    return [len(set(order[:x]) & set(targets)) / len(targets) for x in KS]


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    n=st.integers(3, 30),
    weights=st.dictionaries(st.sampled_from(SIGNALS), st.sampled_from([0.0, 0.5, 1.0])),
    scaled=st.dictionaries(st.sampled_from(SIGNALS), st.sampled_from([0.0, 0.005, 0.02, 1.0])),
    k=st.sampled_from([8.0, 16.0]),
)
def test_the_fit_recall_is_the_plain_fusion_recall(data, n, weights, scaled, k):  # type: ignore[no-untyped-def]
    level = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 3.5])  # ties and zeros, often
    scores = {s: np.array(data.draw(st.lists(level, min_size=n, max_size=n))) for s in SIGNALS}
    scores["graph"] = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    rows = [data.draw(st.integers(0, n - 1))]
    targets = sorted(
        set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))) - set(rows)
    )
    if not targets:
        return
    got = Prepared((scores, rows, targets)).recall((weights, k, scaled))
    assert got == _by_hand(scores, rows, targets, weights, k, scaled)


def test_the_refit_groups_are_the_tuning_trees_and_no_held_out_one():
    """bench.repomap_refit's thirteen groups: every tuning tree once, in the order the passes made
    them tuning trees (6, 6, then eleven of 3), and no held-out tree among them."""
    from bench import repomap_eval_data as data
    from bench.repomap_refit import tuning_groups

    groups = tuning_groups()
    flat = [r for g in groups for r in g]
    tuning = [r for r, (_, role) in data.REPOS.items() if role.startswith("tuning")]
    assert flat == tuning and [len(g) for g in groups] == [6, 6, *[3] * 12]
    assert not {r for r, (_, role) in data.REPOS.items() if role.startswith("held-out")} & set(flat)
