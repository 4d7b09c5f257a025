"""The model catalog: context windows, output limits, prices and tokenizers, by model name.

Built from litellm's price/context mapping (name -> JSON object) plus `[models."NAME"]` override
tables from the user and workspace configs. Pure: the adapter reads the JSON and the TOML files.
Units: windows and limits are tokens; prices are US dollars per token. How a spelling finds its
catalog name is in model_names.py; what a call costs, in pricing.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tokend.core.errors import InvalidParams, UnknownModel
from tokend.core.model_names import ModelNames

CHAT_MODES = frozenset(
    {"chat", "responses"}
)  # "responses": OpenAI models served by the Responses API only


@dataclass(frozen=True, slots=True)
class TokenPrices:
    """US dollars per token; None when the source does not say."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


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
    prices_above_200k: TokenPrices | None = None  # None: no tier, the base prices apply at any size
    tokenizer: str | None = None  # "o200k_base" | "cl100k_base" | None (estimate)
    strips_reasoning: bool = False  # earlier turns' reasoning is dropped from later requests
    supports_prompt_caching: bool = False
    input_limit: int | None = None

    @property
    def effective_input_tokens(self) -> int:
        """context_window - max_output_tokens, never below 0 (a model whose declared output
        limit is as large as its window leaves no guaranteed room for input)."""
        return max(0, self.context_window - self.max_output_tokens)


def tokenizer_for(name: str) -> str | None:
    """The tiktoken encoding of an OpenAI model family, from its bare name; None for other vendors."""
    bare = name.rsplit("/", 1)[-1].lower().removeprefix("ft:")
    if re.match(r"(chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5)", bare) or re.match(
        r"o[134](-|$)", bare
    ):
        return "o200k_base"
    if re.match(r"(gpt-4|gpt-3\.5|gpt-35)(-|$)", bare):
        return "cl100k_base"
    return None


def _strips_reasoning(name: str, provider: str | None, entry: Mapping[str, Any]) -> bool:
    """OpenAI reasoning models never get earlier reasoning back; Anthropic drops earlier thinking
    blocks unless the model preserves them (litellm: supports_thinking_cache_preservation)."""
    if tokenizer_for(name) is not None:
        return bool(entry.get("supports_reasoning"))
    if "claude" in name.lower() or "anthropic" in (provider or ""):
        return not entry.get("supports_thinking_cache_preservation", False)
    return False


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _price(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else None


PRICE_KEYS: dict[str, tuple[bool, str]] = {
    "input_cost_per_token": (False, "input"),
    "output_cost_per_token": (False, "output"),
    "cache_read_input_token_cost": (False, "cache_read"),
    "cache_creation_input_token_cost": (False, "cache_write"),
    "input_cost_per_token_above_200k_tokens": (True, "input"),
    "output_cost_per_token_above_200k_tokens": (True, "output"),
    "cache_read_input_token_cost_above_200k_tokens": (True, "cache_read"),
    "cache_creation_input_token_cost_above_200k_tokens": (True, "cache_write"),
}
"""litellm price key -> (is the above-200k tier, TokenPrices field). Also the override keys."""


def _prices(entry: Mapping[str, Any], tier: bool) -> TokenPrices:
    found = {f: _price(entry.get(k)) for k, (t, f) in PRICE_KEYS.items() if t is tier}
    return TokenPrices(**found)


def parse_litellm_entry(name: str, entry: Mapping[str, Any]) -> ModelInfo | None:
    """A chat model of litellm's mapping; None for other modes or entries without max_input_tokens."""
    window = _count(entry.get("max_input_tokens"))
    if entry.get("mode") not in CHAT_MODES or window is None or window <= 0:
        return None
    output = _count(entry.get("max_output_tokens")) or _count(entry.get("max_tokens")) or 0
    provider = entry.get("litellm_provider")
    provider = provider if isinstance(provider, str) else None
    tier = _prices(entry, tier=True)
    return ModelInfo(
        name=name,
        provider=provider,
        context_window=window,
        max_output_tokens=max(0, output),
        prices=_prices(entry, tier=False),
        prices_above_200k=None if tier == TokenPrices() else tier,
        tokenizer=tokenizer_for(name),
        strips_reasoning=_strips_reasoning(name, provider, entry),
        supports_prompt_caching=bool(entry.get("supports_prompt_caching", False)),
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
    "strips_reasoning", "supports_prompt_caching", *PRICE_KEYS,
)  # fmt: skip
"""Keys of a `[models."NAME"]` table (prices use litellm's key names, dollars per token)."""


def unknown_model_message(name: str) -> str:
    return (
        f'Unknown model {name!r}. Declare it in a [models."{name}"] table in '
        "~/.config/tokend/config.toml (user) or in .tokend.toml (workspace), with "
        "context_window = <tokens> and max_output_tokens = <tokens>, and optionally tokenizer "
        '("o200k_base" or "cl100k_base"), input_cost_per_token and output_cost_per_token (USD).'
    )


def apply_override(
    name: str, base: ModelInfo | None, table: Mapping[str, Any]
) -> tuple[ModelInfo | None, list[str]]:
    """`base` with the valid keys of one `[models."NAME"]` table; a new model when base is None.
    Invalid or unknown keys are skipped with a warning; a new model without context_window is None."""
    warnings: list[str] = []
    changes: dict[str, Any] = {}
    price_changes: dict[bool, dict[str, float]] = {False: {}, True: {}}
    for key, value in table.items():
        if key in ("context_window", "input_limit") and (_count(value) or 0) > 0:
            changes[key] = value
        elif key == "max_output_tokens" and _count(value) is not None and value >= 0:
            changes[key] = value
        elif key in ("tokenizer", "provider") and isinstance(value, str):
            changes[key] = value or None  # tokenizer = "": estimate, no exact tokenizer
        elif key in ("strips_reasoning", "supports_prompt_caching") and isinstance(value, bool):
            changes[key] = value
        elif key in PRICE_KEYS and _price(value) is not None:
            is_tier, field_name = PRICE_KEYS[key]
            price_changes[is_tier][field_name] = float(value)
        else:
            problem = "is invalid" if key in OVERRIDE_KEYS else "is not a known key"
            warnings.append(f'[models."{name}"] {key} = {value!r} {problem}; ignored')
    if price_changes[False]:
        changes["prices"] = replace(base.prices if base else TokenPrices(), **price_changes[False])
    if price_changes[True]:
        old_tier = (base.prices_above_200k if base else None) or TokenPrices()
        changes["prices_above_200k"] = replace(old_tier, **price_changes[True])
    if base is not None:
        return replace(base, **changes), warnings
    if "context_window" not in changes:
        warnings.append(f'[models."{name}"] declares a new model without context_window; ignored')
        return None, warnings
    changes.setdefault("max_output_tokens", 0)
    changes.setdefault("tokenizer", tokenizer_for(name))
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
    ) -> None:
        self._entries: Mapping[str, Any] = entries or {}
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
            info, new_model_warnings = apply_override(name, None, table)
            if info is not None:
                self._parsed[name] = info
                self._names.add(name, info.provider)
            return new_model_warnings
        warnings: list[str] = []
        for target in (key, *self._names.dated_variants(key)):
            info, found = apply_override(target, self._info(target), table)
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
            raise UnknownModel(
                unknown_model_message(name), {"model": name, "suggestions": suggestions}
            )
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
