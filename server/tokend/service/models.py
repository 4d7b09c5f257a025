"""Which model a session runs on, and the token counter for it.

A workspace's .tokend.toml may declare or override models, so each workspace gets its own
catalog (built once, on first use); counters are shared by every session of the same model
and context window.
"""

from __future__ import annotations

from collections.abc import Callable

from tokend.core.calibration import Calibrator
from tokend.core.catalog import Catalog, ModelInfo, with_context_window
from tokend.core.ports import CountCache
from tokend.core.types import SessionInfo
from tokend.service.counting import ModelCounter


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
