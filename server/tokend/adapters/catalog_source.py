"""Reads litellm's model price/context JSON (as data: litellm is never imported) into a Catalog.

The JSON is the copy an installed tokend wheel ships in tokend/data/ (packaged_data.py), else the
one inside an installed litellm package (a source checkout's .venv, from scripts/bootstrap).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tokend.adapters.packaged_data import CATALOG_FILE, VOCABULARIES, packaged_catalog
from tokend.core.catalog import Catalog
from tokend.core.model_names import CLAUDE_FAMILIES

log = logging.getLogger(__name__)

LITELLM_JSON = CATALOG_FILE


def find_litellm_json() -> Path | None:
    """The JSON shipped inside the installed litellm package, located without importing it."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / LITELLM_JSON
        if candidate.is_file():
            return candidate
    return None


def find_catalog_json() -> Path | None:
    """The catalog JSON: tokend's packaged copy first, then litellm's."""
    return packaged_catalog() or find_litellm_json()


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
                "the model catalog %s was not found, neither in tokend/data/ (an installed tokend "
                "wheel ships it) nor in an installed litellm package; only models declared in "
                '[models."NAME"] tables are known. Reinstall tokend with pip or pipx, or in a '
                "source checkout run scripts/bootstrap.",
                LITELLM_JSON,
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
