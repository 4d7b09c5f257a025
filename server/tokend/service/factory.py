"""Build the shared service from configuration: store, catalog, counters."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import unquote, urlparse

from tokend.adapters.catalog_source import load_catalog
from tokend.adapters.config_files import load_config, read_user_config, read_workspace_config
from tokend.adapters.store import SqlStore, resolve_database_url
from tokend.core.catalog import Catalog
from tokend.service.service import TokendService

log = logging.getLogger(__name__)


def workspace_path(uri: str) -> Path | None:
    """The folder of a file:// workspace URI (None for other schemes)."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def workspace_catalog(uri: str) -> Catalog:
    """The catalog with the user's config and the workspace's .tokend.toml applied."""
    path = workspace_path(uri)
    workspace = path if path is not None and path.is_dir() else None
    return load_catalog(read_user_config(), read_workspace_config(workspace))


def build_service(workspace: Path | None = None, database_url: str | None = None) -> TokendService:
    """The service for `workspace` (its .tokend.toml applies), with the store migrated to head."""
    config, warnings = load_config(workspace)
    for warning in warnings:
        log.warning("config: %s", warning)
    catalog = load_catalog(read_user_config(), read_workspace_config(workspace))
    store = SqlStore.open(resolve_database_url(database_url or config.database_url))
    return TokendService(store, catalog, config, cache=store, workspace_catalog=workspace_catalog)
