"""A Claude model's counter: exact through its family, else the estimate, said once."""

from __future__ import annotations

import logging

import pytest

from tokend.core.calibration import Calibrator
from tokend.core.catalog import ModelInfo
from tokend.service import counting
from tokend.service.counting import ModelCounter


def claude(name: str, tokenizer: str | None) -> ModelInfo:
    return ModelInfo(name, "anthropic", 200_000, 64_000, tokenizer=tokenizer)


def test_a_claude_family_counts_exactly() -> None:
    counter = ModelCounter(claude("claude-opus-4-7", "claude-v4.7"), None, Calibrator())
    assert counter.exact
    assert counter.count_text("the") == 1  # count_tokens("the") on claude-opus-4-7: 12 = 11 + 1


def test_an_unknown_family_falls_back_to_the_estimate_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = claude("claude-mythos-preview-b", None)
    with caplog.at_level(logging.WARNING, logger="tokend.service.counting"):
        first = ModelCounter(model, None, Calibrator())
        ModelCounter(model, None, Calibrator())
    assert not first.exact and first.count_text("hello there") > 0
    said = [r.getMessage() for r in caplog.records if "claude-mythos-preview-b" in r.getMessage()]
    assert len(said) == 1
    assert "counted by the estimate" in said[0] and "claude-v3, claude-v4.7, claude-v4.8" in said[0]


def test_without_ctok_a_family_falls_back_to_the_estimate_and_says_how_to_fix_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(counting, "ctok_installed", lambda: False)
    with caplog.at_level(logging.WARNING, logger="tokend.service.counting"):
        counter = ModelCounter(claude("claude-sonnet-4-5-x", "claude-v3"), None, Calibrator())
    assert not counter.exact
    (said,) = [r.getMessage() for r in caplog.records]
    assert "needs the ctok package" in said and "--ignore-requires-python" in said
