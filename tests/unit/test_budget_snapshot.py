"""The gauge's breakdown adds up to the one number, whatever the figures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.budget.snapshot import MEASURED_CATEGORIES, breakdown, used_percentage

tokens = st.integers(min_value=0, max_value=2_000_000)
measured_figures = st.fixed_dictionaries({c: tokens for c in MEASURED_CATEGORIES})


@given(used=tokens, measured=measured_figures)
def test_a_back_calculated_breakdown_adds_up_exactly(used, measured):
    items, warnings = breakdown(used, measured, None, measured_basis="exact")
    assert sum(item.tokens for item in items) == used
    assert all(item.tokens >= 0 for item in items)
    messages = items[-1]
    assert messages.category == "messages" and messages.basis == "derived"
    if sum(measured.values()) > used:
        assert messages.tokens == 0 and warnings  # capped, and said so
    else:
        assert not warnings
        assert messages.tokens == used - sum(measured.values())


@given(measured=measured_figures, messages=tokens)
def test_a_counted_breakdown_is_the_sum_of_its_parts(measured, messages):
    used = sum(measured.values()) + messages
    items, warnings = breakdown(used, measured, messages, measured_basis="estimate")
    assert sum(item.tokens for item in items) == used and not warnings
    assert {i.basis for i in items} == {"estimate"}


def test_measured_parts_larger_than_the_total_are_scaled_to_fit():
    items, warnings = breakdown(1_000, {"system": 900, "tools": 300}, None, measured_basis="exact")
    figures = {i.category: i.tokens for i in items}
    assert figures == {"system": 750, "tools": 250, "messages": 0}
    assert "exceed" in warnings[0]


def test_used_percentage_has_one_decimal_and_handles_a_zero_window():
    assert used_percentage(167_094, 200_000) == 83.5
    assert used_percentage(5, 0) == 100.0
