"""Reads the user's config.toml and the workspace's .tokend.toml into a TokendConfig.

The user's file is config.toml in the platform's user config folder for "tokend":
$XDG_CONFIG_HOME/tokend/config.toml, else ~/.config/tokend/config.toml, on Linux. The
workspace's is .tokend.toml at the workspace folder's root. How the layers merge is in
tokend.core.settings.config (the settings: tokend.core.settings.tables); service/settings/workspace_settings.py keeps them per workspace and re-reads them on change.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from tokend.adapters.config_paths import (
    WORKSPACE_CONFIG_NAME,
    FileStamp,
    file_stamp,
    user_config_file,
)
from tokend.core.settings.config import ConfigLayer, MergedConfig, merge_layers
from tokend.core.settings.tables import TokendConfig

DATABASE_URL_ENV = "TOKEND_DATABASE_URL"

LayerName = Literal["user", "workspace"]


def user_config_path() -> Path:
    """config.toml in the platform's user config folder for "tokend" (~/.config/tokend on Linux,
    or $XDG_CONFIG_HOME/tokend when that is set)."""
    return Path(user_config_file())


def workspace_config_path(workspace: Path) -> Path:
    return workspace / WORKSPACE_CONFIG_NAME


def read_toml(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The parsed document; {} with no warning when the file does not exist, {} and a warning
    when it cannot be read or parsed."""
    try:
        with path.open("rb") as file:
            return tomllib.load(file), []
    except FileNotFoundError:
        return {}, []
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        return {}, [f"{path}: not read ({error}); its settings are ignored, defaults used"]


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """One config file as tokend looked for it: which layer, where (absolute), and whether it
    was there. `stamp` is what it was when read (None: absent)."""

    layer: LayerName
    path: Path
    exists: bool
    stamp: FileStamp | None = None


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A config file read: where it is, its document ({} when absent or unreadable) and why it
    was not read."""

    source: ConfigSource
    document: dict[str, Any]
    warnings: tuple[str, ...]

    def layer(self) -> ConfigLayer:
        source = self.source
        return ConfigLayer(
            source.layer, str(source.path), self.document, workspace=source.layer == "workspace"
        )


def read_config_file(layer: LayerName, path: Path) -> ConfigFile:
    """Stat, then read: a change after the stat is seen at the next check, never missed."""
    path = path.absolute()
    stamp = file_stamp(path)
    document, warnings = read_toml(path)
    source = ConfigSource(layer, path, stamp is not None, stamp)
    return ConfigFile(source, document, tuple(warnings))


def merge_files(
    files: list[ConfigFile], environ: Mapping[str, str] | None = None
) -> MergedConfig[TokendConfig]:
    """Defaults < each file in order, then TOKEND_DATABASE_URL (when set and non-empty)
    replaces database_url (origin "environment"). Read warnings come first."""
    merged = merge_layers(TokendConfig(), [file.layer() for file in files])
    read_warnings = tuple(w for file in files for w in file.warnings)
    merged = replace(merged, warnings=read_warnings + merged.warnings)
    env_url = (os.environ if environ is None else environ).get(DATABASE_URL_ENV)
    if env_url:
        config = replace(merged.config, database_url=env_url)
        origins = {**merged.origins, "database_url": "environment"}
        merged = replace(merged, config=config, origins=origins)
    return merged


def read_user_config(path: Path | None = None) -> dict[str, Any]:
    """The user's config document ({} when absent or unreadable; `load_config` reports why)."""
    return read_toml(path or user_config_path())[0]


def read_workspace_config(workspace: Path | None) -> dict[str, Any]:
    """<workspace>/.tokend.toml as a document ({} when absent, unreadable or no workspace)."""
    return read_toml(workspace_config_path(workspace))[0] if workspace is not None else {}


def load_config(
    workspace: Path | None,
    *,
    user_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[TokendConfig, list[str]]:
    """Defaults < user config.toml < <workspace>/.tokend.toml, then TOKEND_DATABASE_URL (when set
    and non-empty) replaces database_url. Never raises for a bad file: it becomes a warning."""
    files = [read_config_file("user", user_path or user_config_path())]
    if workspace is not None:
        files.append(read_config_file("workspace", workspace_config_path(workspace)))
    merged = merge_files(files, environ)
    return merged.config, list(merged.warnings)
