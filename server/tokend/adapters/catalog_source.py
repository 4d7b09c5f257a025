"""Reads litellm's model price/context JSON (as data: litellm is never imported) into a Catalog.

The JSON is the copy tokend ships in tokend/data/ (packaged_data.py): an installed wheel's, or a
source checkout's server/tokend/data/, which scripts/bootstrap takes from the same litellm wheel.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tokend.adapters.packaged_data import CATALOG_FILE, VOCABULARIES, packaged_catalog
from tokend.core.models.catalog import Catalog
from tokend.core.models.names import CLAUDE_FAMILIES

log = logging.getLogger(__name__)


def find_catalog_json() -> Path | None:
    """The catalog JSON tokend ships (an installed wheel's tokend/data/, or a checkout's
    server/tokend/data/ from scripts/bootstrap), None when it is missing."""
    return packaged_catalog()


class LitellmEntries:
    """litellm's name -> entry mapping, read once on first use (thread-safe) and read-only.

    `path` None: find it (find_catalog_json). When the file is missing or
    unreadable, the mapping is empty and one warning is logged.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._entries: Mapping[str, Any] | None = None

    def get(self) -> Mapping[str, Any]:
        if self._entries is None:
            with self._lock:
                if self._entries is None:
                    self._entries = MappingProxyType(self._read())
        return self._entries

    def _read(self) -> dict[str, Any]:
        path = self._path or find_catalog_json()
        if path is None:
            log.warning(
                "the model catalog %s was not found in tokend/data/ (an installed tokend wheel "
                'ships it); only models declared in [models."NAME"] tables are known. Reinstall '
                "tokend with pip or pipx, or in a source checkout run scripts/bootstrap.",
                CATALOG_FILE,
            )
            return {}
        try:
            with path.open("rb") as file:
                data = json.load(file)
        except (OSError, ValueError) as error:
            log.warning("could not read %s (%s); only declared models are known", path, error)
            return {}
        if not isinstance(data, dict):
            log.warning("%s is not a JSON object; only declared models are known", path)
            return {}
        return data


_DEFAULT_ENTRIES = LitellmEntries()
"""Process-wide: the ~3 MB file is immutable data, parsed once however many catalogs are built."""


def load_catalog(
    user_config: Mapping[str, Any] | None = None,
    workspace_config: Mapping[str, Any] | None = None,
    *,
    entries: LitellmEntries | None = None,
) -> Catalog:
    """litellm's catalog with the `[models."NAME"]` tables of the user, then workspace, config
    documents applied (a workspace key beats a user key beats litellm). An override's tokenizer
    must be one tokend can load (packaged_data.VOCABULARIES, or a Claude family). Override warnings are logged and
    kept in `Catalog.warnings`."""
    layers = []
    for document in (user_config or {}, workspace_config or {}):
        models = document.get("models", {})
        layers.append(models if isinstance(models, Mapping) else {})
    catalog = Catalog(
        (entries or _DEFAULT_ENTRIES).get(),
        layers,
        tokenizers=frozenset(VOCABULARIES) | set(CLAUDE_FAMILIES),
    )
    for warning in catalog.warnings:
        log.warning("%s", warning)
    return catalog
