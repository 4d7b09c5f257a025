"""Is a side's lead or deficit in one cell of bench.repomap_eval beyond the noise of its queries?

A tree gives 25 queries of each kind, so one target more or less in a map's first place moves a
cell's R@1 by 0.02-0.04. Each cell is therefore also read per query: the difference between
tokend's share of the targets and another side's, on the same query, and a paired bootstrap of
those differences (RESAMPLES resamples of the queries with replacement, a fixed seed: the same
figures every run) gives the mean difference's 95% interval. A deficit is beyond the noise when
the whole interval is below 0, a lead when it is above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000
SEED = 24  # the number: any fixed seed gives repeatable intervals


@dataclass(frozen=True, slots=True)
class Paired:
    """tokend's mean minus a side's over the same queries, and its 95% interval."""

    diff: float
    low: float
    high: float

    @property
    def behind(self) -> bool:
        return self.diff < -1e-12

    @property
    def ahead(self) -> bool:
        return self.diff > 1e-12

    @property
    def beyond_noise(self) -> bool:
        return self.high < 0 or self.low > 0


def paired(ours: Sequence[float], theirs: Sequence[float]) -> Paired:
    """The mean of ours minus theirs, query by query, with its paired bootstrap 95% interval."""
    d = np.asarray(ours, float) - np.asarray(theirs, float)
    if len(d) != len(theirs) or not len(d):
        raise ValueError("a paired comparison needs the same queries on both sides")
    picks = np.random.default_rng(SEED).integers(0, len(d), size=(RESAMPLES, len(d)))
    means = d[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Paired(float(d.mean()), float(low), float(high))


@dataclass(slots=True)
class Tally:
    """tokend against one side over many cells: how many ahead and behind, and how many of
    each beyond the noise."""

    cells: int = 0
    ahead: int = 0
    ahead_beyond: int = 0
    behind: int = 0
    behind_beyond: int = 0

    def add(self, p: Paired) -> None:
        self.cells += 1
        self.ahead += p.ahead
        self.behind += p.behind
        self.ahead_beyond += p.ahead and p.beyond_noise
        self.behind_beyond += p.behind and p.beyond_noise

    def line(self, side: str) -> str:
        return (f"tokend against {side}: ahead in {self.ahead} of {self.cells} cells "
                f"({self.ahead_beyond} beyond the noise), behind in {self.behind} "
                f"({self.behind_beyond} beyond the noise)")  # fmt: skip


def behind_line(side: str, kind: str, cell: str, p: Paired) -> str:
    """One cell where tokend is behind `side`: the difference and its interval."""
    mark = " **beyond the noise**" if p.beyond_noise else ""
    return (f"- behind {side}: {kind} {cell} {p.diff:+.3f} "
            f"(95% interval {p.low:+.3f} to {p.high:+.3f}){mark}")  # fmt: skip
