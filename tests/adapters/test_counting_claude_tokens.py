"""The Claude tier: counts against what Anthropic's count_tokens returned, and against ctok whole.

Oracles: the count_tokens figures ctok's vocabulary files record for their probes (each witness is
a probe text and the `raw` count the API returned for it as one user message, measured on
claude-opus-4-5 for v3 and claude-opus-4-7 for v4.7), and ctok's own count of a whole text as one
message (the test oracle the issue names) for long real texts.
"""

from __future__ import annotations

import json
import random
import sysconfig
from importlib.resources import files
from pathlib import Path

import ctok
import pytest

from tokend.adapters.claude_tokens import ClaudeCounter
from tokend.adapters.tokenizers import CachedCounter, counter_for
from tokend.core.errors import TokenizerUnavailable

VOCABULARY_FILES = {"claude-v3": "pieces_v3.json", "claude-v4.7": "pieces_v4_7.json"}
CTOK_VERSION = {"claude-v3": "3.0", "claude-v4.7": "4.7", "claude-v4.8": "4.8"}
FRAME = {"claude-v3": 7, "claude-v4.7": 11, "claude-v4.8": 6}  # ctok's measured message frames


def recorded_probes(family: str, n: int) -> list[tuple[str, int]]:
    """n (probe text, count_tokens result) pairs from the family's published measurements."""
    text = files("ctok").joinpath("data", VOCABULARY_FILES[family]).read_text(encoding="utf-8")
    doc = json.loads(text)
    probes = sorted(
        {
            (w["probe"], w["raw"])
            for group in doc["tokens"].values()
            for w in group.values()
            if "probe" in w and "raw" in w
        }
    )
    return random.Random(20).sample(probes, n)


@pytest.mark.parametrize("family", sorted(VOCABULARY_FILES))
def test_counts_match_what_count_tokens_returned(family: str) -> None:
    counter = ClaudeCounter(family)
    probes = recorded_probes(family, 400)
    wrong = [(p, raw) for p, raw in probes if counter.count(p) + FRAME[family] != raw]
    assert wrong == []


def real_text(limit: int) -> str:
    """Python, Markdown and JSON files of the running interpreter's site-packages, concatenated."""
    site = Path(sysconfig.get_paths()["purelib"])
    chosen: list[str] = []
    total = 0
    for pattern in ("pip/_internal/**/*.py", "**/*.md", "pygls/**/*.py", "**/METADATA"):
        for path in sorted(site.glob(pattern)):
            text = path.read_text(encoding="utf-8", errors="replace")
            chosen.append(text)
            total += len(text)
            if total > limit:
                return "".join(chosen)
    return "".join(chosen)


@pytest.mark.parametrize("family", sorted(CTOK_VERSION))
def test_a_long_text_is_counted_as_ctok_counts_it_whole(family: str) -> None:
    text = real_text(120_000)
    assert text.count("\n") > 1_000
    whole = ctok.token_count(text, CTOK_VERSION[family]) - FRAME[family]
    assert ClaudeCounter(family).count(text) == whole


def test_families_are_exact_cached_counters_under_their_own_name() -> None:
    counter = counter_for("claude-v4.7")
    assert isinstance(counter, CachedCounter)
    assert counter.exact and counter.name == "claude-v4.7"
    assert counter.key("hello").startswith("claude-v4.7:")
    # Opus 4.7's vocabulary is another than v3's: the same text does not cost the same.
    text = "def tokenizer_family(name: str) -> str:\n    return name.lower()\n"
    assert counter.count(text) != counter_for("claude-v3").count(text)


def test_an_unknown_family_is_refused_with_the_families() -> None:
    with pytest.raises(TokenizerUnavailable) as refused:
        ClaudeCounter("claude-v9")
    assert "claude-v3, claude-v4.7, claude-v4.8" in str(refused.value)


def test_small_texts_persist_in_the_count_cache_for_claude() -> None:
    stored: dict[str, int] = {}

    class Cache:
        def get_many(self, keys: list[str]) -> dict[str, int]:
            return {k: stored[k] for k in keys if k in stored}

        def put_many(self, counts: dict[str, int]) -> None:
            stored.update(counts)

    text = "A paragraph of about six hundred characters. " * 14
    assert CachedCounter(ClaudeCounter("claude-v3"), Cache()).count(text) > 0
    assert list(stored) == [CachedCounter(ClaudeCounter("claude-v3")).key(text)]


def test_a_ctok_release_not_checked_counts_with_ctok_itself(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tokend.adapters import claude_tokens

    monkeypatch.setattr(claude_tokens, "CHECKED_CTOK", frozenset({"0.0.1"}))
    monkeypatch.setattr(claude_tokens, "_models", {})
    text = "def f(x):\n    return x  # It's 'quoted'\n"
    with caplog.at_level("WARNING", logger="tokend.adapters.claude_tokens"):
        got = ClaudeCounter("claude-v4.8").count(text)
    assert got == ctok.token_count(text, "4.8") - FRAME["claude-v4.8"]
    assert type(claude_tokens._models["claude-v4.8"]).__name__ == "_CtokItself"
    assert "Claude counts use ctok itself" in caplog.text
