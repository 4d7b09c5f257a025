"""Usage accounting: the next-input rule and the error log a gauge shows."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokend.core.types import Usage
from tokend.core.usage.accounting import (
    ErrorLog,
    EstimateError,
    predict_next_input,
    summarize_abs_errors,
)

tokens = st.integers(min_value=0, max_value=2_000_000)


def test_next_input_resends_whole_input_and_output_plus_added() -> None:
    last = Usage(
        input_tokens=3, output_tokens=441, cache_read_tokens=17842, cache_write_tokens=8037
    )

    assert predict_next_input(last, added_tokens=723) == 3 + 17842 + 8037 + 441 + 723


def test_dropped_reasoning_is_taken_off_the_output_only() -> None:
    last = Usage(input_tokens=100, output_tokens=300)

    assert predict_next_input(last, added_tokens=10, reasoning_tokens_dropped=200) == 210
    assert predict_next_input(last, added_tokens=10, reasoning_tokens_dropped=999) == 110


def test_negative_added_tokens_are_refused() -> None:
    with pytest.raises(ValueError):
        predict_next_input(Usage(1, 1), added_tokens=-1)


@given(tokens, tokens, tokens, tokens, tokens)
def test_prediction_never_below_last_context(inp, out, read, write, added) -> None:
    last = Usage(
        input_tokens=inp, output_tokens=out, cache_read_tokens=read, cache_write_tokens=write
    )

    predicted = predict_next_input(last, added)

    assert predicted >= last.context_tokens + added


def test_error_pct_is_signed_relative_to_actual() -> None:
    assert EstimateError(predicted=101, actual=100).error_pct == pytest.approx(1.0)
    assert EstimateError(predicted=90, actual=100).error_pct == pytest.approx(-10.0)
    assert EstimateError(predicted=0, actual=0).error_pct == 0.0
    assert math.isinf(EstimateError(predicted=5, actual=0).error_pct)


def test_error_log_keeps_last_n_and_summarizes_absolute_errors() -> None:
    log = ErrorLog(size=3)
    assert log.last_error_pct is None
    assert log.summary().median_abs_error_pct is None

    for predicted in (150, 98, 103, 90):  # vs 100 each: +50, -2, +3, -10
        log.record(predicted, 100)

    assert len(log) == 3  # the +50% is gone
    assert log.last_error_pct == pytest.approx(-10.0)
    summary = log.summary()
    assert summary.count == 3
    assert summary.median_abs_error_pct == pytest.approx(3.0)
    assert summary.p90_abs_error_pct == pytest.approx(10.0)
    assert summary.max_abs_error_pct == pytest.approx(10.0)


@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=200))
def test_summary_statistics_are_ordered(errors) -> None:
    summary = summarize_abs_errors(errors)

    assert summary.count == len(errors)
    assert min(errors) <= summary.median_abs_error_pct <= summary.p90_abs_error_pct
    assert summary.p90_abs_error_pct <= summary.max_abs_error_pct == max(errors)
