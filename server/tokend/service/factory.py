"""Build the shared service from configuration: store, catalog, counters."""

from __future__ import annotations

from pathlib import Path

from tokend.adapters.catalog_source import load_catalog
from tokend.adapters.config_files import load_config, read_user_config, read_workspace_config
from tokend.adapters.store import SqlStore, resolve_database_url
from tokend.service.service import TokendService


def build_service(workspace: Path | None = None, database_url: str | None = None) -> TokendService:
    """The service for `workspace` (its .tokend.toml applies), with the store migrated to head."""
    config, warnings = load_config(workspace)
    for warning in warnings:
        import logging

        logging.getLogger(__name__).warning("config: %s", warning)
    catalog = load_catalog(read_user_config(), read_workspace_config(workspace))
    store = SqlStore.open(resolve_database_url(database_url or config.database_url))
    return TokendService(store, catalog, config, cache=store)
