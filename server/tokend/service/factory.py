"""Build the shared service from configuration: store, settings per workspace, counters."""

from __future__ import annotations

import logging
from pathlib import Path

from tokend.adapters.store import SqlStore, resolve_database_url
from tokend.service.service import TokendService
from tokend.service.settings import WarningsHook, WorkspaceSettings

log = logging.getLogger(__name__)


def build_service(
    workspace: Path | None = None,
    database_url: str | None = None,
    *,
    on_warnings: WarningsHook | None = None,
) -> TokendService:
    """The service for `workspace` (its .tokend.toml applies to sessions without a workspace
    of their own), with the store migrated to head. Every workspace's settings are read from
    its own .tokend.toml over the user's config, and read again when either file changes.
    `on_warnings` hears of settings problems (the daemon tells the workspace's clients);
    without it they are logged."""
    settings = WorkspaceSettings(on_warnings=on_warnings)
    base_uri = workspace.resolve().as_uri() if workspace else None
    base = settings.for_workspace(base_uri)
    if on_warnings is None:
        for warning in base.warnings:
            log.warning("config: %s", warning)
    store = SqlStore.open(resolve_database_url(database_url or base.config.database_url))
    return TokendService(
        store,
        base.catalog,
        base.config,
        cache=store,
        workspace_catalog=lambda uri: settings.for_workspace(uri or base_uri).catalog,
        workspace_config=lambda uri: settings.for_workspace(uri or base_uri).config,
        forget_settings=lambda uri: settings.forget(uri or base_uri),
    )
