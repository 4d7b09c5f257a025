"""The model catalog: context windows, output limits, prices and tokenizers, by model name.

Built from litellm's price/context mapping (name -> JSON object) plus `[models."NAME"]` override
tables from the user and workspace configs. Pure: the adapter reads the JSON and the TOML files.
Units: windows and limits are tokens; prices are US dollars per token. How a spelling finds its
catalog name is in names.py; which price keys are read, in prices.py; what a model's name implies
(tokenizer, request features), in traits.py; what a call costs, in core/usage/pricing.py.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tokend.core.errors import InvalidParams, UnknownModel
from tokend.core.excerpt import excerpt
from tokend.core.models.names import CLAUDE_FAMILIES, ModelNames, unknown_model_message
from tokend.core.models.prices import BASE_PRICE_KEYS, parse_prices, price, price_key, with_rates
from tokend.core.models.prices import PriceTier as PriceTier  # re-exported with ModelInfo
from tokend.core.models.prices import TokenPrices as TokenPrices  # re-exported with ModelInfo
from tokend.core.models.traits import (
    native_budget_injection_for,
    provider_compaction_for,
    strips_reasoning_for,
    tokenizer_for,
)

# "responses": OpenAI models served by the Responses API only
CHAT_MODES = frozenset({"chat", "responses"})


ENCODINGS = frozenset({"o200k_base", "cl100k_base", *CLAUDE_FAMILIES})
"""The tokenizers `tokenizer_for` assigns; the adapter passes the list it can load (the same)."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What tokend needs to know about one model. Windows and limits in tokens.

    `context_window` is litellm's `max_input_tokens` (or a configured/session value): the tokens one
    call may hold. `max_output_tokens` is 0 when unknown. `input_limit` is a provider's separate cap on
    input tokens when it differs from the window (models.dev `limit.input`); litellm never sets it.
    """

    name: str
    provider: str | None
    context_window: int
    max_output_tokens: int
    prices: TokenPrices = TokenPrices()
    price_tiers: tuple[PriceTier, ...] = ()  # by threshold, ascending; () : one price at any size
    tokenizer: str | None = None  # "o200k_base" | "cl100k_base" | a Claude family | None (estimate)
    strips_reasoning: bool = False  # earlier turns' reasoning is dropped from later requests
    supports_prompt_caching: bool = False
    input_limit: int | None = None
    # Trained on Anthropic's context-awareness tags (core.assembly.budget_injection "native"):
    # Claude Sonnet 4.5, Sonnet 4.6 and Haiku 4.5.
    native_budget_injection: bool = False
    # The provider can compact the context itself (Anthropic's compact_20260112 edit; OpenAI's
    # /responses/compact): the snapshot then advises compactWith "provider".
    provider_compaction: bool = False

    @property
    def effective_input_tokens(self) -> int:
        """context_window - max_output_tokens, never below 0 (a model whose declared output
        limit is as large as its window leaves no guaranteed room for input)."""
        return max(0, self.context_window - self.max_output_tokens)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_litellm_entry(name: str, entry: Mapping[str, Any]) -> ModelInfo | None:
    """A chat model of litellm's mapping; None for other modes or entries without max_input_tokens."""
    window = _count(entry.get("max_input_tokens"))
    if entry.get("mode") not in CHAT_MODES or window is None or window <= 0:
        return None
    output = _count(entry.get("max_output_tokens")) or _count(entry.get("max_tokens")) or 0
    provider = entry.get("litellm_provider")
    provider = provider if isinstance(provider, str) else None
    prices, tiers = parse_prices(entry)
    return ModelInfo(
        name=name,
        provider=provider,
        context_window=window,
        max_output_tokens=max(0, output),
        prices=prices,
        price_tiers=tiers,
        tokenizer=tokenizer_for(name),
        strips_reasoning=strips_reasoning_for(name, provider, entry),
        supports_prompt_caching=bool(entry.get("supports_prompt_caching", False)),
        native_budget_injection=native_budget_injection_for(name),
        provider_compaction=provider_compaction_for(name, provider, entry),
    )


def with_context_window(info: ModelInfo, window: int) -> ModelInfo:
    """The same model with a per-session window (e.g. 200,000 for Claude's standard window where
    the catalog lists the 1,000,000 extended one). Tokens; must be > 0."""
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise InvalidParams(f"contextWindow must be a positive number of tokens, got {window!r}")
    return replace(info, context_window=window)


# -- overrides -------------------------------------------------------------------------------

OVERRIDE_KEYS = (
    "context_window", "max_output_tokens", "input_limit", "tokenizer", "provider",
    "strips_reasoning", "supports_prompt_caching", "native_budget_injection",
    "provider_compaction", *BASE_PRICE_KEYS,
)  # fmt: skip
"""Keys of a `[models."NAME"]` table (prices use litellm's key names, dollars per token; a tier
rate is a base price key + "_above_<N>k_tokens", e.g. input_cost_per_token_above_272k_tokens)."""


_FLAG_KEYS = (
    "strips_reasoning",
    "supports_prompt_caching",
    "native_budget_injection",
    "provider_compaction",
)


def apply_override(
    name: str,
    base: ModelInfo | None,
    table: Mapping[str, Any],
    tokenizers: Collection[str] = ENCODINGS,
) -> tuple[ModelInfo | None, list[str]]:
    """`base` with the valid keys of one `[models."NAME"]` table; a new model when base is None.
    Invalid or unknown keys are skipped with a warning (a tokenizer not in `tokenizers` too, the
    warning naming the valid ones); a new model without context_window is None."""
    warnings: list[str] = []
    changes: dict[str, Any] = {}
    rates: list[tuple[int | None, str, float]] = []
    for key, value in table.items():
        rate_key, rate = price_key(key), price(value)
        if key in ("context_window", "input_limit") and (_count(value) or 0) > 0:
            changes[key] = value
        elif key == "max_output_tokens" and _count(value) is not None and value >= 0:
            changes[key] = value
        elif key == "tokenizer" and value in ("", *tokenizers):
            changes[key] = value or None  # tokenizer = "": estimate, no exact tokenizer
        elif key == "tokenizer" and isinstance(value, str) and value.lower().startswith("claude"):
            families = ", ".join(f'"{f}" ({models})' for f, models in CLAUDE_FAMILIES.items())
            warnings.append(
                f'[models."{name}"] tokenizer = {value!r} names no Claude tokenizer family; '
                f"ignored (families: {families})"
            )
        elif key == "tokenizer":
            valid = ", ".join(f'"{t}"' for t in sorted(tokenizers))
            warnings.append(
                f'[models."{name}"] tokenizer = {value!r} is not a tokenizer tokend has; ignored '
                f'(valid: {valid}, or "" for the estimate)'
            )
        elif key == "provider" and isinstance(value, str):
            changes[key] = value or None
        elif key in _FLAG_KEYS and isinstance(value, bool):
            changes[key] = value
        elif rate_key is not None and rate is not None:
            rates.append((*rate_key, rate))
        else:
            known = key in OVERRIDE_KEYS or rate_key is not None
            problem = "is invalid" if known else "is not a known key"
            warnings.append(f'[models."{name}"] {key} = {value!r} {problem}; ignored')
    if rates:
        old = (base.prices, base.price_tiers) if base else (TokenPrices(), ())
        changes["prices"], changes["price_tiers"] = with_rates(*old, rates)
    if base is not None:
        return replace(base, **changes), warnings
    if "context_window" not in changes:
        warnings.append(f'[models."{name}"] declares a new model without context_window; ignored')
        return None, warnings
    changes.setdefault("max_output_tokens", 0)
    changes.setdefault("tokenizer", tokenizer_for(name))
    changes.setdefault("native_budget_injection", native_budget_injection_for(name))
    changes.setdefault(
        "provider_compaction", provider_compaction_for(name, changes.get("provider"))
    )
    return ModelInfo(name=name, provider=changes.pop("provider", None), **changes), warnings


# -- the catalog -----------------------------------------------------------------------------


def _is_chat_entry(entry: Any) -> bool:
    return (
        isinstance(entry, Mapping)
        and entry.get("mode") in CHAT_MODES
        and (_count(entry.get("max_input_tokens")) or 0) > 0
    )


class Catalog:
    """Model name -> ModelInfo: litellm's chat entries, then each override layer in order
    (user, then workspace: a later layer's key beats an earlier one's, which beats litellm's).

    An override table whose name resolves to a known model changes that model (under its catalog
    name, so every spelling sees the change); any other name declares a new model. Invalid
    override keys end up in `warnings`. Entries are parsed on first `get`; the cache is safe to
    share between threads (a race parses an entry twice, with the same result).
    """

    def __init__(
        self,
        entries: Mapping[str, Any] | None = None,
        override_layers: Sequence[Mapping[str, Any]] = (),
        tokenizers: Collection[str] = ENCODINGS,
    ) -> None:
        self._entries: Mapping[str, Any] = entries or {}
        self._tokenizers = tokenizers
        self._parsed: dict[str, ModelInfo] = {}
        self._names = ModelNames()
        for key, entry in self._entries.items():
            if _is_chat_entry(entry):
                self._names.add(key, entry.get("litellm_provider"))
        warnings: list[str] = []
        for layer in override_layers:
            for name, table in layer.items():
                warnings.extend(self._override(name, table))
        self.warnings: tuple[str, ...] = tuple(warnings)

    def _override(self, name: str, table: Any) -> list[str]:
        """Apply one `[models."NAME"]` table to the model it names and that model's dated
        variants (an override of claude-opus-4-5 also covers claude-opus-4-5-20251101)."""
        if not isinstance(table, Mapping):
            return [f'[models."{name}"] must be a table; ignored']
        key = self._resolve(name)
        if key is None:
            info, new_model_warnings = apply_override(name, None, table, self._tokenizers)
            if info is not None:
                self._parsed[name] = info
                self._names.add(name, info.provider)
            return new_model_warnings
        warnings: list[str] = []
        for target in (key, *self._names.dated_variants(key)):
            info, found = apply_override(target, self._info(target), table, self._tokenizers)
            warnings = warnings or found
            if info is not None:  # always, given a base
                self._parsed[target] = info
        return warnings

    def get(self, name: str) -> ModelInfo:
        """The model `name` spells: exact, any case, provider-prefixed ("anthropic/claude-..."),
        with or without a date suffix. Raises UnknownModel saying how to declare it."""
        info = self.find(name)
        if info is None:
            suggestions = self._names.close_matches(name)
            message = unknown_model_message(name, suggestions)
            if not self._entries:
                message += (
                    " The model catalog itself is missing (its data file was not found): reinstall "
                    "tokend with pip or pipx (its wheel ships the catalog), or in a source "
                    "checkout run scripts/bootstrap."
                )
            raise UnknownModel(message, {"model": excerpt(name), "suggestions": suggestions})
        return info

    def find(self, name: str) -> ModelInfo | None:
        key = self._resolve(name)
        return self._info(key) if key is not None else None

    def names(self) -> Iterator[str]:
        """Every catalog name (litellm chat models and declared ones)."""
        return iter(self._names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._resolve(name) is not None

    def _info(self, key: str) -> ModelInfo:
        info = self._parsed.get(key)
        if info is None:
            info = parse_litellm_entry(key, self._entries[key])
            assert info is not None  # only chat entries are indexed
            self._parsed[key] = info
        return info

    def _resolve(self, name: str) -> str | None:
        if name in self._parsed or (name in self._entries and _is_chat_entry(self._entries[name])):
            return name
        return self._names.resolve(name)
