"""What a model's name implies when litellm's entry does not say: its tokenizer, whether it
knows Anthropic's budget text, whether its provider can compact its context, whether earlier
reasoning is stripped from its requests. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tokend.core.models.names import claude_family


def tokenizer_for(name: str) -> str | None:
    """The tokenizer a model's name implies: a Claude model's family ("claude-v3", ...), an
    OpenAI model family's tiktoken encoding; None for other vendors (the estimate)."""
    return claude_family(name) or _openai_encoding(name)


def _openai_encoding(name: str) -> str | None:
    """The tiktoken encoding of an OpenAI model family, from its bare name."""
    bare = name.rsplit("/", 1)[-1].lower().removeprefix("ft:")
    if re.match(r"(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5)", bare) or re.match(
        r"o[134](-|$)", bare
    ):
        return "o200k_base"
    if re.match(r"(gpt-4|gpt-3\.5|gpt-35)(-|$)", bare):
        return "cl100k_base"
    return None


_NATIVE_BUDGET = re.compile(r"claude-(sonnet-4[-.][56]|haiku-4[-.]5)(?![0-9])")


def native_budget_injection_for(name: str) -> bool:
    """Was the model trained on `<budget:token_budget>` and `<system_warning>Token usage…`?
    Anthropic's context-awareness models, under any provider's spelling (anthropic/, bedrock's
    anthropic.…-v1:0, vertex's @date)."""
    return _NATIVE_BUDGET.search(name.lower()) is not None


_CLAUDE_VERSION = re.compile(
    r"claude-(?:opus|sonnet|haiku|fable|mythos)-(\d{1,2})(?:[-.](\d{1,2}))?(?![0-9])"
)
_PROVIDER_COMPACTION_SINCE = (4, 6)  # Anthropic's compaction API: Opus 4.6, Sonnet 4.6, later
# OpenAI's /responses/compact takes any Responses model; these are the current families.
_OPENAI_COMPACTION = re.compile(r"(gpt-5|gpt-4\.1|gpt-4o|o[134])(?![0-9])")
_OPENAI_PROVIDERS = (None, "openai", "azure", "text-completion-openai")


def provider_compaction_for(
    name: str, provider: str | None, entry: Mapping[str, Any] | None = None
) -> bool:
    """Can the provider compact this model's context itself? litellm's
    `supports_anthropic_compaction` when the entry has it; else Claude models of generation 4.6
    and later (the compaction API's models), and OpenAI's Responses models on OpenAI or Azure
    (/responses/compact)."""
    if entry is not None and "supports_anthropic_compaction" in entry:
        return bool(entry["supports_anthropic_compaction"])
    lowered = name.lower()
    found = _CLAUDE_VERSION.search(lowered)
    if found is not None:
        if entry is not None:
            return False  # litellm lists its compaction models; this is not one of them
        version = (int(found.group(1)), int(found.group(2) or 0))
        return version >= _PROVIDER_COMPACTION_SINCE
    bare = lowered.rsplit("/", 1)[-1].removeprefix("ft:")
    return provider in _OPENAI_PROVIDERS and _OPENAI_COMPACTION.match(bare) is not None


def strips_reasoning_for(name: str, provider: str | None, entry: Mapping[str, Any]) -> bool:
    """OpenAI reasoning models never get earlier reasoning back; Anthropic drops earlier thinking
    blocks unless the model preserves them (litellm: supports_thinking_cache_preservation)."""
    if _openai_encoding(name) is not None:
        return bool(entry.get("supports_reasoning"))
    if "claude" in name.lower() or "anthropic" in (provider or ""):
        return not entry.get("supports_thinking_cache_preservation", False)
    return False
