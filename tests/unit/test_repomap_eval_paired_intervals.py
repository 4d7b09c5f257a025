"""bench.repomap_eval_paired: a cell's lead or deficit against the noise of its queries, by a
paired bootstrap. Oracles: the normal approximation of a mean's interval (mean +- 1.96 standard
errors), which the bootstrap must agree with on a large sample, and differences whose sign no
resample can change."""

from __future__ import annotations

import statistics

import numpy as np
import pytest


def test_the_interval_agrees_with_the_normal_approximation_on_a_large_sample() -> None:
    from bench.repomap_eval_paired import paired

    rng = np.random.default_rng(7)
    ours = rng.uniform(0, 1, 400).tolist()
    theirs = (np.asarray(ours) - rng.normal(0.05, 0.3, 400)).tolist()
    d = [a - b for a, b in zip(ours, theirs, strict=True)]
    half = 1.96 * statistics.stdev(d) / len(d) ** 0.5
    p = paired(ours, theirs)
    assert p.diff == pytest.approx(statistics.mean(d))
    assert p.low == pytest.approx(statistics.mean(d) - half, abs=0.006)
    assert p.high == pytest.approx(statistics.mean(d) + half, abs=0.006)


def test_a_deficit_on_every_query_is_beyond_the_noise_and_one_query_is_not() -> None:
    from bench.repomap_eval_paired import Tally, paired

    everywhere = paired([0.0] * 25, [0.5] * 24 + [1.0])
    assert everywhere.behind and everywhere.beyond_noise and everywhere.high < 0
    one = paired([0.0] + [0.5] * 24, [1.0] + [0.5] * 24)  # one query of 25: R@1 -0.02
    assert one.behind and not one.beyond_noise and one.low < 0 <= one.high
    same = paired([0.3, 0.6], [0.3, 0.6])
    assert not same.behind and not same.ahead and (same.low, same.high) == (0.0, 0.0)
    tally = Tally()
    for p in (everywhere, one, same, paired([1.0] * 5, [0.0] * 5)):
        tally.add(p)
    assert (tally.cells, tally.ahead, tally.ahead_beyond, tally.behind, tally.behind_beyond) == (
        4, 1, 1, 2, 1,
    )  # fmt: skip


def test_the_sides_must_answer_the_same_queries() -> None:
    from bench.repomap_eval_paired import paired

    with pytest.raises(ValueError, match="same queries"):
        paired([0.1, 0.2], [0.1])
