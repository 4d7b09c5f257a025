"""The Claude tier: Claude's token counts offline, through ctok.

Anthropic publishes no tokenizer. ctok (PyPI, MIT) reconstructs the counts of Anthropic's
`count_tokens` from a measured vocabulary for three families (core.models.names.CLAUDE_FAMILIES)
and agrees exactly on its held-out sets. tokend depends on it rather than re-deriving its ~700
lines of measured normalization rules (case markers, word boundaries, byte fallback): a second
copy of those facts would drift from the one that is checked against Anthropic, and would be no
faster in Python.

What a text part costs is ctok's count of the text as one user message minus that family's
message frame (what `count_tokens` adds around any content). tokend computes that count through
its own faster path over ctok's vocabulary and rules (adapters.claude_fast: line by line, case
marking per word and the tiling per segment remembered), which gives ctok's number exactly: a
1 MB tool result in about a third of ctok's time.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from tokend.core.errors import TokenizerUnavailable
from tokend.core.models.names import CLAUDE_FAMILIES
from tokend.core.text_chunks import CHUNK_CHARS

log = logging.getLogger(__name__)

CTOK_VERSIONS: dict[str, str] = {"claude-v3": "3.0", "claude-v4.7": "4.7", "claude-v4.8": "4.8"}
"""The version ctok routes to each family (its families are chosen by a model version)."""

PERSIST_MIN_CHARS = 512
"""Counts of texts this long are kept in the store's count cache (CachedCounter): counting 512
characters again costs ctok ~2 ms, several SQLite round trips."""

_FIX = (
    "The Claude tier needs the ctok package: it installs with tokend on Python 3.12 and later; "
    "on 3.11 run `pip install --no-deps --ignore-requires-python ctok` in tokend's environment."
)

CHECKED_CTOK = frozenset({"1.3.0"})
"""ctok releases tokend's own counting path (adapters.claude_fast) was checked against: it
restates ctok's stream rules for ASCII text, so under any other release tokend counts with ctok's
own `tile` (the same count, ~3x slower) until the tests pass there too."""

_load_lock = threading.Lock()
_models: dict[str, _Counting] = {}  # family -> counter over ctok's model (~1 s to build)


class _Counting(Protocol):
    def count(self, text: str) -> int: ...

    def count_pieces(self, text: str, size: int) -> Iterator[int]: ...

    def forget(self) -> None: ...


class _CtokItself:
    """ctok's own count (content only, as FastClaude's)."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def forget(self) -> None:
        """Nothing is remembered."""

    def count(self, text: str) -> int:
        from ctok.engine import tile

        return int(tile(text, self._model)[0])

    def count_pieces(self, text: str, size: int) -> Iterator[int]:
        """The count in one part: ctok's own counting has no steps."""
        yield self.count(text)


def _counting(model: Any, version: str) -> _Counting:
    from tokend.adapters.claude_fast import FastClaude

    if version in CHECKED_CTOK:
        return FastClaude(model)
    log.warning(
        "ctok %s is not a release tokend checked its own counting path against: "
        "Claude counts use ctok itself",
        version,
    )
    return _CtokItself(model)


def ctok_installed() -> bool:
    """Is ctok importable here (without importing it)?"""
    try:
        return importlib.util.find_spec("ctok") is not None
    except (ImportError, ValueError):
        return False


def _model(family: str) -> _Counting:
    model = _models.get(family)
    if model is not None:
        return model
    with _load_lock:
        model = _models.get(family)
        if model is None:
            try:
                from ctok.main import _family, _model

                version = importlib.metadata.version("ctok")
            except (ImportError, importlib.metadata.PackageNotFoundError) as exc:
                raise TokenizerUnavailable(
                    f"Cannot count {family}: {exc}. {_FIX}", {"tokenizer": family}
                ) from exc
            model = _counting(_model(_family(CTOK_VERSIONS[family])), version)
            _models[family] = model
            log.info("loaded ctok's %s vocabulary", family)
    return model


class ClaudeCounter:
    """TokenCounter of one Claude tokenizer family (exact): the tokens a text costs as content,
    without the message frame. Loads the family's vocabulary on first use; thread-safe."""

    def __init__(self, family: str) -> None:
        if family not in CLAUDE_FAMILIES:
            known = ", ".join(CLAUDE_FAMILIES)
            raise TokenizerUnavailable(
                f"Unknown Claude tokenizer family {family!r}; families: {known}.",
                {"tokenizer": family, "families": list(CLAUDE_FAMILIES)},
            )
        self._family = family
        self.persist_min_chars = PERSIST_MIN_CHARS

    @property
    def name(self) -> str:
        return self._family

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        """Tokens of `text` as Claude counts it (0 for "")."""
        if not text:
            return 0
        return _model(self._family).count(text)

    def count_pieces(self, text: str, size: int = CHUNK_CHARS) -> Iterator[int]:
        """Tokens of `text` in parts that add up to its count, one after every `size` characters
        or so (adapters.claude_fast: cut between lines, where the count is a sum anyway; a
        message of its own would count differently, so the pieces are not counted alone)."""
        if text:
            yield from _model(self._family).count_pieces(text, size)
