"""Size budgets, as a ratchet: modules <= 300 lines, functions <= 60, classes <= 15 public
methods (issue 18). What is over budget today is listed, with its size, in
tests/unit/data/size_debt.json: nothing new may go over, nothing listed may grow, and an item
back within budget leaves the list (so the list only shrinks). Regenerate the list's sizes with
`python -m tests.unit.size_budgets` only when shrinking it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.size_budgets import BUDGETS, measure

DEBT = Path(__file__).with_name("data") / "size_debt.json"


def test_nothing_new_goes_over_budget_and_nothing_listed_grows() -> None:
    debt = json.loads(DEBT.read_text())
    now = measure()
    problems = []
    for kind, budget in BUDGETS.items():
        listed = debt.get(kind, {})
        for name, size in sorted(now[kind].items()):
            if name not in listed:
                problems.append(f"{name}: {size} {kind}, over the budget of {budget}")
            elif size > listed[name]:
                problems.append(f"{name}: {size} {kind}, grew from {listed[name]}")
        for name in sorted(set(listed) - set(now[kind])):
            problems.append(f"{name}: back within {budget} {kind}: remove it from {DEBT.name}")
    assert not problems, "\n".join(problems)
