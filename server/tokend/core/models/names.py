"""Which catalog name a user's spelling of a model means.

"anthropic/claude-opus-4-5", "Claude-Opus-4.5" and "claude-opus-4-5-20251101" may all mean
one catalog entry: names match in any case, without leading "provider/" segments, with or
without a date suffix (an undated name means the newest dated one), and a bare name finds a
first-party vendor's "vendor/model" entry when litellm lists the model only prefixed.
A name that finds nothing gets unknown_model_message: the close names, and how to declare it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence

from tokend.core.excerpt import excerpt

FIRST_PARTY_PROVIDERS = frozenset(
    {"openai", "anthropic", "gemini", "deepseek", "mistral", "xai", "moonshot", "zai", "dashscope"}
)
"""Vendors whose own "vendor/model" entry answers a bare "model" that litellm lists only prefixed."""

MAX_NAME_CHARS = 256
"""A longer spelling names no model: it is not resolved (each "provider/" segment would be
another candidate to try) nor compared with the catalog's names (difflib is quadratic)."""

_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")  # claude-...-20251101, gpt-4o-2024-08-06


class ModelNames:
    """An index of catalog names, filled with `add`, answering `resolve`."""

    def __init__(self) -> None:
        self._by_lower: dict[str, str] = {}  # lower-cased name -> catalog name
        self._dated: dict[str, list[str]] = {}  # lower undated name -> its dated catalog names
        self._first_party: dict[str, str] = {}  # lower bare name -> "vendor/bare"

    def add(self, key: str, provider: object) -> None:
        """Index the catalog name `key` (its litellm_provider, if any, as `provider`)."""
        lower = key.lower()
        self._by_lower.setdefault(lower, key)
        dated = _DATE_SUFFIX.search(lower)
        if dated:
            self._dated.setdefault(lower[: dated.start()], []).append(key)
        prefix, _, bare = lower.rpartition("/")
        if prefix and prefix == provider and prefix in FIRST_PARTY_PROVIDERS:
            self._first_party.setdefault(bare, key)

    def resolve(self, name: str) -> str | None:
        """The catalog name `name` spells, or None."""
        if len(name) > MAX_NAME_CHARS:
            return None
        spellings = list(_spellings(name))
        for spelling in spellings:
            if spelling in self._by_lower:
                return self._by_lower[spelling]
        for spelling in spellings:
            undated = _DATE_SUFFIX.sub("", spelling)
            if undated in self._by_lower:
                return self._by_lower[undated]
            if undated in self._dated:
                return max(self._dated[undated], key=str.lower)  # the newest date
            if undated in self._first_party:
                return self._first_party[undated]
        return None

    def dated_variants(self, key: str) -> Sequence[str]:
        """The dated catalog names of the undated name `key` (claude-opus-4-5-20251101 for
        claude-opus-4-5)."""
        return self._dated.get(key.lower(), ())

    def close_matches(self, name: str) -> list[str]:
        """Up to three catalog names that look like `name` (for an unknown model's error)."""
        if len(name) > MAX_NAME_CHARS:
            return []
        close = difflib.get_close_matches(name.lower(), list(self._by_lower), n=3, cutoff=0.75)
        return [self._by_lower[c] for c in close]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_lower.values())


def _spellings(name: str) -> Iterator[str]:
    """Lower-cased candidates: the name, then without each leading "provider/" segment;
    Claude names also with dots between digits as dashes (OpenRouter's "claude-opus-4.5")."""
    parts = name.strip().lower().split("/")
    for i in range(len(parts)):
        tail = "/".join(parts[i:])
        yield tail
        if "claude" in tail:
            yield re.sub(r"(?<=\d)\.(?=\d)", "-", tail)


# -- Claude's tokenizer families ---------------------------------------------------------------

CLAUDE_FAMILIES: dict[str, str] = {
    "claude-v3": "Claude 3 through Opus 4.6",
    "claude-v4.7": "Opus 4.7",
    "claude-v4.8": "Opus 4.8, Sonnet 5, Fable 5 and later (v4.7's vocabulary, a six-token frame)",
}
"""The Claude tokenizer families tokend counts exactly (a catalog `tokenizer` value), each with
the models that use it. Anthropic publishes no tokenizer: the counts are ctok's reconstruction."""

# "claude-3-5-sonnet", "claude-3.7-sonnet", "anthropic.claude-3-haiku-20240307-v1:0"
_CLAUDE_3 = re.compile(r"claude-3(?:[-.]\d{1,2})?-(?:opus|sonnet|haiku)(?![a-z])")
# "claude-opus-4-7", "claude-sonnet-5", "claude-opus-4-20250514" (4.0), "claude-opus-4.5@20251101"
_CLAUDE_NAMED = re.compile(
    r"claude-(?:opus|sonnet|haiku|fable|mythos)-(\d{1,2})(?:[-.](\d{1,2}))?(?![0-9])"
)


def claude_family(name: str) -> str | None:
    """The tokenizer family (a CLAUDE_FAMILIES key) of a Claude model, from its name in any
    provider's spelling; None when the name is not a Claude model of a known generation
    (claude-2, claude-instant-1, claude-mythos-preview: those are counted by the estimate)."""
    lowered = name.lower()[:MAX_NAME_CHARS]
    if _CLAUDE_3.search(lowered):
        return "claude-v3"
    found = _CLAUDE_NAMED.search(lowered)
    if found is None:
        return None
    version = (int(found.group(1)), int(found.group(2) or 0))
    if version < (3, 0):
        return None
    if version < (4, 7):
        return "claude-v3"
    if version < (4, 8):
        return "claude-v4.7"
    return "claude-v4.8"


def is_claude(name: str) -> bool:
    """Does `name` spell an Anthropic Claude model (of any generation)?"""
    return "claude" in name.lower()[:MAX_NAME_CHARS]


def unknown_model_message(name: str, suggestions: Sequence[str] = ()) -> str:
    """What to do about a model the catalog does not know: a likely typo first (the catalog's
    close names), then how to declare a model that is really new."""
    guess = ""
    if suggestions:
        quoted = [f'"{s}"' for s in suggestions]
        names = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
        guess = f" Did you mean {names}? If it is a model the catalog lacks, declare"
    return (
        f"Unknown model {excerpt(name)}."
        + (guess or " Declare")
        + f" it in a [models.{excerpt(name)}] table in "
        "~/.config/tokend/config.toml (user) or in .tokend.toml (workspace), with "
        "context_window = <tokens> and max_output_tokens = <tokens>, and optionally tokenizer "
        '("o200k_base", "cl100k_base" or a Claude family: "claude-v3", "claude-v4.7", '
        '"claude-v4.8"), input_cost_per_token and output_cost_per_token (USD).'
    )
