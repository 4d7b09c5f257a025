"""Reads the user's config.toml and the workspace's .tokend.toml into a TokendConfig."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import platformdirs

from tokend.core.config import TokendConfig, merge_config

WORKSPACE_CONFIG_NAME = ".tokend.toml"
DATABASE_URL_ENV = "TOKEND_DATABASE_URL"


def user_config_path() -> Path:
    """config.toml in the platform's user config folder for "tokend" (~/.config/tokend on Linux)."""
    return Path(platformdirs.user_config_dir("tokend")) / "config.toml"


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


def read_user_config(path: Path | None = None) -> dict[str, Any]:
    """The user's config document ({} when absent or unreadable; `load_config` reports why)."""
    return read_toml(path or user_config_path())[0]


def read_workspace_config(workspace: Path | None) -> dict[str, Any]:
    """<workspace>/.tokend.toml as a document ({} when absent, unreadable or no workspace)."""
    return read_toml(workspace / WORKSPACE_CONFIG_NAME)[0] if workspace is not None else {}


def load_config(
    workspace: Path | None,
    *,
    user_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[TokendConfig, list[str]]:
    """Defaults < user config.toml < <workspace>/.tokend.toml, then TOKEND_DATABASE_URL (when set
    and non-empty) replaces database_url. Never raises for a bad file: it becomes a warning."""
    user_path = user_path or user_config_path()
    user, warnings = read_toml(user_path)
    workspace_doc: dict[str, Any] = {}
    workspace_path = workspace / WORKSPACE_CONFIG_NAME if workspace is not None else None
    if workspace_path is not None:
        workspace_doc, found = read_toml(workspace_path)
        warnings += found
    sources = (str(user_path), str(workspace_path or "workspace config"))
    config, found = merge_config(TokendConfig(), user, workspace_doc, sources=sources)
    env_url = (os.environ if environ is None else environ).get(DATABASE_URL_ENV)
    if env_url:
        config = replace(config, database_url=env_url)
    return config, warnings + found
