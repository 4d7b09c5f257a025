"""A Claude model's counter: exact through its family, else the estimate, said once."""

from __future__ import annotations

import logging
import statistics
import sysconfig
from pathlib import Path

import pytest

from tokend.adapters.claude_tokens import ClaudeCounter
from tokend.adapters.tokenizers import ExactTokenizers
from tokend.core.counting.calibration import Calibrator
from tokend.core.counting.estimate import DEFAULT_CHARS_PER_TOKEN, estimate_tokens
from tokend.core.models.catalog import ModelInfo
from tokend.service.app import open_service
from tokend.service.counting.counter import ModelCounter


class WithoutCtok(ExactTokenizers):
    """This process's tokenizers as on a machine without ctok (handed in as the app does)."""

    def has_claude_families(self) -> bool:
        return False


def claude(name: str, tokenizer: str | None) -> ModelInfo:
    return ModelInfo(name, "anthropic", 200_000, 64_000, tokenizer=tokenizer)


def test_a_claude_family_counts_exactly() -> None:
    counter = ModelCounter(
        claude("claude-opus-4-7", "claude-v4.7"), None, Calibrator(), tokenizers=ExactTokenizers()
    )
    assert counter.exact
    assert counter.count_text("the") == 1  # count_tokens("the") on claude-opus-4-7: 12 = 11 + 1


def test_an_unknown_family_falls_back_to_the_estimate_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = claude("claude-mythos-preview-b", None)
    with caplog.at_level(logging.WARNING, logger="tokend.service.counting.counter"):
        first = ModelCounter(model, None, Calibrator(), tokenizers=ExactTokenizers())
        ModelCounter(model, None, Calibrator(), tokenizers=ExactTokenizers())
    assert not first.exact and first.count_text("hello there") > 0
    said = [r.getMessage() for r in caplog.records if "claude-mythos-preview-b" in r.getMessage()]
    assert len(said) == 1
    assert "counted by the estimate" in said[0] and "claude-v3, claude-v4.7, claude-v4.8" in said[0]


def test_without_ctok_a_family_falls_back_to_the_estimate_and_says_how_to_fix_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="tokend.service.counting.counter"):
        counter = ModelCounter(
            claude("claude-sonnet-4-5-x", "claude-v3"), None, Calibrator(), tokenizers=WithoutCtok()
        )
    assert not counter.exact
    (said,) = [r.getMessage() for r in caplog.records]
    assert "needs the ctok package" in said and "--ignore-requires-python" in said


def python_files(n: int) -> list[str]:
    site = Path(sysconfig.get_paths()["purelib"])
    paths = sorted(p for p in (site / "pip" / "_internal").rglob("*.py") if p.stat().st_size > 2000)
    return [p.read_text(encoding="utf-8") for p in paths[:n]]


@pytest.mark.parametrize("family", ["claude-v3", "claude-v4.7"])
def test_without_an_exact_count_a_family_is_estimated_in_its_own_tokens(
    family: str,
) -> None:
    calibrator = Calibrator(DEFAULT_CHARS_PER_TOKEN)  # as the service builds it
    estimated = ModelCounter(
        claude(f"claude-test-{family}", family), None, calibrator, tokenizers=WithoutCtok()
    )
    exact = ClaudeCounter(family)
    texts = python_files(25)
    errors = [abs(estimated.count_text(t) / exact.count(t) - 1) for t in texts]
    o200k_shaped = [abs(estimate_tokens(t) / exact.count(t) - 1) for t in texts]
    assert statistics.mean(errors) < 0.06
    assert statistics.mean(o200k_shaped) > 0.15  # what a Claude estimate was before the priors


def test_a_restart_recounts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'tokend.sqlite3'}"
    text = python_files(1)[0]
    service = open_service(None, url)
    model = service.catalog.get("claude-opus-4-6")
    counted = service.models.counter(model).count_text(text)
    assert counted == ClaudeCounter("claude-v3").count(text)
    service.close()

    def recount(self: ClaudeCounter, text: str) -> int:
        raise AssertionError("counted again after a restart")

    monkeypatch.setattr(ClaudeCounter, "count", recount)
    reopened = open_service(None, url)
    assert (
        reopened.models.counter(model).count_text(text) == counted
    )  # from the store's count cache
    reopened.close()


def test_without_ctok_a_claude_model_is_estimated_with_its_familys_weights() -> None:
    from tokend.core.counting.estimate_families import family_estimate_tokens

    counter = ModelCounter(
        claude("claude-opus-4-7", "claude-v4.7"), None, Calibrator(), tokenizers=WithoutCtok()
    )
    assert not counter.exact
    for text in python_files(3):
        assert counter.count_text(text) == family_estimate_tokens(text, "claude-v4.7")
        assert counter.count_text(text) != estimate_tokens(text)  # not o200k's weights
