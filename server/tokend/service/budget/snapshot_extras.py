"""Figures from outside the conversation that every budget snapshot carries: warnings (spend
limits) and the daemon's rate headroom, both the usage monitor's (service.usage.monitor)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.session.data import SessionData
from tokend.core.usage.stats import RateHeadroom

WarningSource = Callable[[SessionData, BudgetSnapshot], tuple[str, ...]]
RateSource = Callable[[SessionData], RateHeadroom | None]


class SnapshotExtras:
    def __init__(self) -> None:
        self._warnings: list[WarningSource] = []
        self._rate: RateSource | None = None

    def add_warnings(self, source: WarningSource) -> None:
        """Warnings from `source` in every snapshot built from now on."""
        self._warnings.append(source)

    def set_rate_source(self, rate: RateSource) -> None:
        """The daemon's rate headroom, put in every snapshot built from now on."""
        self._rate = rate

    def decorate(self, data: SessionData, snapshot: BudgetSnapshot) -> BudgetSnapshot:
        """`snapshot` with the extra warnings and the rate headroom."""
        extra = tuple(w for source in self._warnings for w in source(data, snapshot))
        rate = self._rate(data) if self._rate is not None else None
        if not extra and rate is None:
            return snapshot
        return replace(snapshot, warnings=(*snapshot.warnings, *extra), rate=rate)
