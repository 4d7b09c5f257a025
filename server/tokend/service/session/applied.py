"""What a change to a session became: its next data, its snapshot, whether it is broadcast
(service.session.state makes it; service.session.group_commit and the listeners read it)."""

from __future__ import annotations

from dataclasses import dataclass

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.session.evolve import Evolved


@dataclass(frozen=True, slots=True)
class Applied:
    evolved: Evolved
    snapshot: BudgetSnapshot
    broadcast: bool  # False for changes that are reads to the user (measured context)
