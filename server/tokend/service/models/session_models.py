"""A session's settings as its workspace gives them: its config, its model, the token counter
for it, and how many input tokens a request of it may hold.

A workspace's .tokend.toml may change settings and declare or override models, so each
workspace gets its own config and catalog (built once, on first use, read again when a config
file changes); counters are shared by every session of the same model and context window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokend.core.budget.limits import input_room_tokens
from tokend.core.counting.calibration import Calibrator
from tokend.core.models.catalog import Catalog, ModelInfo, with_context_window
from tokend.core.ports import CountCache
from tokend.core.session.data import SessionData
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import SessionInfo
from tokend.service.counting.counter import ModelCounter
from tokend.service.ports import ExactCounters


class SessionModels:
    def __init__(
        self,
        catalog: Catalog,
        config: TokendConfig,
        calibrator: Calibrator,
        cache: CountCache | None = None,
        *,
        tokenizers: ExactCounters,
        workspace_catalog: Callable[[str], Catalog] | None = None,
        workspace_config: Callable[[str | None], TokendConfig] | None = None,
        forget_settings: Callable[[str | None], None] | None = None,
        settings_key: Callable[[str | None], list[Any] | None] | None = None,
    ) -> None:
        self._catalog = catalog
        self._config = config
        self._calibrator = calibrator
        self._cache = cache
        self._tokenizers = tokenizers  # the exact ones this process has (the app's)
        self._workspace_catalog = workspace_catalog
        self._workspace_config = workspace_config
        self._forget_settings = forget_settings
        self._settings_key = settings_key  # core.statusline.row: what the row's line was read under
        self._counters: dict[str, ModelCounter] = {}

    def config_for(self, workspace_uri: str | None) -> TokendConfig:
        """The settings of a workspace (its .tokend.toml over the user's config)."""
        workspace = self._workspace_config
        return self._config if workspace is None else workspace(workspace_uri)

    def settings_changed(self, workspace_uri: str | None) -> None:
        """The client says settings changed: the workspace's files are read again at its next
        request (not only at the next periodic check)."""
        if self._forget_settings is not None:
            self._forget_settings(workspace_uri)

    def settings_stamps(self, workspace_uri: str | None) -> list[Any] | None:
        """The config files a workspace's settings were read from, stamped (core.statusline.row:
        what a session row's line was read under); None without settings files to stamp."""
        key = self._settings_key
        return None if key is None else key(workspace_uri)

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
        """The token counter of `model` (shared by its sessions)."""
        # Every field that changes counting: a workspace may override the tokenizer or provider.
        key = f"{model.name}@{model.context_window}:{model.tokenizer}:{model.provider}"
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = ModelCounter(
                model, self._cache, self._calibrator, tokenizers=self._tokenizers
            )
        return counter

    def input_limit(self, data: SessionData) -> int:
        """Tokens a request of the session may hold (core.budget.limits.input_room_tokens under its
        workspace's settings; the safety margin only when its counts are estimates)."""
        budget = self.config_for(data.info.workspace_uri).budget
        exact = self.counter(data.model).exact
        return max(0, input_room_tokens(data.model, budget, exact=exact))
