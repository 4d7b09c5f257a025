"""Which Claude tokenizer family a model name means, and the config key that overrides it."""

from __future__ import annotations

import pytest

from tokend.adapters.catalog_source import load_catalog
from tokend.core.models.names import claude_family


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("claude-3-opus-20240229", "claude-v3"),
        ("claude-3-5-sonnet-latest", "claude-v3"),
        ("claude-3.7-sonnet", "claude-v3"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "claude-v3"),
        ("claude-opus-4-20250514", "claude-v3"),  # Opus 4.0
        ("claude-sonnet-4-5-20250929", "claude-v3"),
        ("anthropic/Claude-Opus-4.6", "claude-v3"),
        ("claude-opus-4-6[1m]", "claude-v3"),
        ("claude-haiku-4-5@20251001", "claude-v3"),
        ("claude-opus-4-7", "claude-v4.7"),
        ("us.anthropic.claude-opus-4-7-20260416-v1:0", "claude-v4.7"),
        ("claude-opus-4-8", "claude-v4.8"),
        ("claude-sonnet-5", "claude-v4.8"),
        ("claude-fable-5-1", "claude-v4.8"),
        ("claude-opus-5", "claude-v4.8"),
        ("claude-2.1", None),
        ("claude-instant-1", None),
        ("claude-mythos-preview", None),
        ("gpt-4o", None),
    ],
)
def test_family_from_the_model_name(name: str, family: str | None) -> None:
    assert claude_family(name) == family


def test_the_family_is_overridden_per_model_in_the_config() -> None:
    user = {"models": {"claude-opus-4-6": {"tokenizer": "claude-v4.7"}}}
    workspace = {"models": {"claude-mythos-preview": {"tokenizer": "claude-v4.8"}}}
    catalog = load_catalog(user, workspace)
    assert catalog.get("claude-opus-4-6").tokenizer == "claude-v4.7"
    assert catalog.get("claude-opus-4-6-20260205").tokenizer == "claude-v4.7"  # dated variant
    assert catalog.get("claude-mythos-preview").tokenizer == "claude-v4.8"
    assert catalog.warnings == ()


def test_a_family_override_that_names_no_family_is_refused_with_the_families() -> None:
    user = {"models": {"claude-opus-4-7": {"tokenizer": "claude-v5"}}}
    catalog = load_catalog(user, {})
    assert catalog.get("claude-opus-4-7").tokenizer == "claude-v4.7"  # the name's family is kept
    (warning,) = catalog.warnings
    assert "'claude-v5' names no Claude tokenizer family" in warning
    for family in ("claude-v3", "claude-v4.7", "claude-v4.8"):
        assert f'"{family}"' in warning
