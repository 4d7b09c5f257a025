"""A sample of bench/fuzz.py's fuzz on the real `tokend serve`: every documented method and
notification, a few of its (field, bad value) cases each, with the bench's assertions but not
its timings. Before: lone surrogates answered InternalError with a traceback, strings were taken
as arrays, a `focus`, `workDoneToken` or LSP capability of any type was accepted."""

from __future__ import annotations

from bench import fuzz
from bench.baseline import ROOT

CASES_PER_METHOD = 6


def test_a_fuzz_sample_of_every_method_gets_no_traceback_and_no_nonsense_accepted() -> None:
    run = fuzz.fuzz_daemon(ROOT / "server", CASES_PER_METHOD, budget_s=600)
    outcome = run["outcome"]
    assert not run["uncovered"], run["uncovered"]
    assert outcome.cases == outcome.planned, (outcome.stopped, outcome.timeouts)
    assert outcome.tracebacks == []
    assert outcome.nonsense == []
    assert outcome.closed == []
    assert outcome.largest_error[0] < fuzz.ERROR_REPLY_LIMIT, outcome.largest_error
