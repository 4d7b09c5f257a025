"""Which model a session runs on, and the token counter for it.

A workspace's .tokend.toml may declare or override models, so each workspace gets its own
catalog (built once, on first use); counters are shared by every session of the same model
and context window.
"""

from __future__ import annotations

from collections.abc import Callable

from tokend.core.budget import (
    BudgetConfig,
    input_room_tokens,
    output_reserve_tokens,
    safety_margin_tokens,
)
from tokend.core.calibration import Calibrator
from tokend.core.catalog import Catalog, ModelInfo, with_context_window
from tokend.core.errors import InvalidParams
from tokend.core.ports import CountCache
from tokend.core.types import SessionInfo
from tokend.service.counting import ModelCounter

MAX_TOKEN_COUNT = 2**31 - 1  # no token figure on the wire may exceed this (protocol.md)


def check_window(model: ModelInfo, window: int, budget: BudgetConfig) -> None:
    """A session's window must leave room for input once the reply is reserved."""
    if window <= 0 or window > MAX_TOKEN_COUNT:
        raise InvalidParams(f"contextWindow must be a positive number of tokens, not {window}")
    sized = with_context_window(model, window)
    reserve = output_reserve_tokens(sized, budget)
    margin = safety_margin_tokens(sized, budget)
    if input_room_tokens(sized, budget) <= 0:
        raise InvalidParams(
            f"contextWindow {window:,} leaves no room for input: {model.name} keeps "
            f"{reserve:,} tokens for its reply and {margin:,} as a safety margin; use a "
            "larger window, or lower budget.output_reserve_cap"
        )


class SessionModels:
    def __init__(
        self,
        catalog: Catalog,
        calibrator: Calibrator,
        cache: CountCache | None,
        workspace_catalog: Callable[[str], Catalog] | None,
    ) -> None:
        self._catalog = catalog
        self._calibrator = calibrator
        self._cache = cache
        self._workspace_catalog = workspace_catalog
        self._counters: dict[str, ModelCounter] = {}

    def catalog_for(self, workspace_uri: str | None) -> Catalog:
        """The catalog with the workspace's overrides (the user's when no workspace is known);
        the settings re-read it when a config file changes."""
        if self._workspace_catalog is None:
            return self._catalog
        return self._workspace_catalog(workspace_uri or "")

    def model_info(self, info: SessionInfo) -> ModelInfo:
        """The session's model from its workspace's catalog, with the session's context window
        (tokens) when it set one."""
        model = self.catalog_for(info.workspace_uri).get(info.model)
        if info.context_window:
            model = with_context_window(model, info.context_window)
        return model

    def counter(self, model: ModelInfo) -> ModelCounter:
        # Every field that changes counting: a workspace may override the tokenizer or provider.
        key = f"{model.name}@{model.context_window}:{model.tokenizer}:{model.provider}"
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = ModelCounter(model, self._cache, self._calibrator)
        return counter
