"""`tokend config [--json] [--workspace DIR]`: the settings that apply in a workspace, and where
each one comes from.

Shows every setting with its value and its origin (the default, the user's config.toml, the
workspace's .tokend.toml, the environment or the command line), the two config files as they
resolve on this machine (XDG_CONFIG_HOME honoured) and whether they exist, where the data and
the database are, and every warning the files raise. Reads files only: it creates nothing.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TextIO

import platformdirs
from rich.text import Text

from tokend.adapters.workspace_settings import Settings, WorkspaceSettings
from tokend.commands.output import Column, say, write_json, write_table
from tokend.core.errors import InvalidParams
from tokend.core.settings.config import model_key
from tokend.core.settings.tables import TokendConfig

ORIGIN_NAMES = {
    "user": "user config",
    "workspace": "workspace file",
    "environment": "TOKEND_DATABASE_URL",
    "command line": "--database-url",
    "default": "default",
}


def run_config(args: argparse.Namespace, out: TextIO) -> int:
    """Print the effective settings of `args.workspace` (default: the current directory)."""
    workspace = (args.workspace or Path.cwd()).absolute()
    if not workspace.is_dir():
        raise InvalidParams(f"--workspace {workspace}: not a directory")
    settings = WorkspaceSettings().for_workspace(workspace.as_uri())
    report = config_report(settings, workspace, getattr(args, "database_url", None))
    if args.json:
        write_json(out, report)
    else:
        _write_text(out, report)
    return 0


def config_report(
    settings: Settings, workspace: Path, database_url: str | None = None
) -> dict[str, Any]:
    """What `tokend config --json` prints (camelCase keys; setting names as TOML spells them)."""
    files: dict[str, str] = {source.layer: str(source.path) for source in settings.sources}
    rows = []
    for key, value in _settings(settings.config):
        origin = settings.origins.get(key, "default")
        row = {"key": key, "value": value, "source": origin, "file": files.get(origin)}
        if key in settings.rejected:  # a layer's value was refused: this one applies instead
            row["rejected"] = settings.rejected[key]
        rows.append(row)
    url, url_origin = _database_url(settings, database_url)
    return {
        "workspace": str(workspace),
        "files": [
            {
                "layer": source.layer,
                "path": str(source.path),
                "resolvedPath": os.path.realpath(source.path),
                "exists": source.exists,
            }
            for source in settings.sources
        ],
        "settings": rows,
        "dataDir": platformdirs.user_data_dir("tokend", appauthor=False),
        "databaseUrl": url,
        "databaseUrlSource": url_origin,
        "logDir": platformdirs.user_state_dir("tokend"),
        "warnings": list(settings.warnings),
    }


def _settings(config: TokendConfig) -> list[tuple[str, Any]]:
    """(dotted key, JSON value) for every setting but database_url: the top-level values, then
    each table's in the order TokendConfig declares them, then the model overrides."""
    top: list[tuple[str, Any]] = []
    tables: list[tuple[str, Any]] = []
    for field in fields(config):
        value = getattr(config, field.name)
        if field.name in ("database_url", "models"):
            continue
        if is_dataclass(value):
            tables += [
                (f"{field.name}.{f.name}", _json(getattr(value, f.name))) for f in fields(value)
            ]
        else:
            top.append((field.name, _json(value)))
    models = [
        (model_key(name, key), value)
        for name, overrides in config.models.items()
        for key, value in overrides.items()
    ]
    return top + tables + models


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _database_url(settings: Settings, explicit: str | None) -> tuple[str, str]:
    """The URL the store opens (password hidden) and where it comes from: --database-url, then
    TOKEND_DATABASE_URL, then the user's config, then the SQLite file in the data dir."""
    from tokend.adapters.store.url import DEFAULT_DB_FILENAME, sqlite_url

    if explicit:
        return _shown(explicit), "command line"
    if settings.config.database_url:
        return _shown(settings.config.database_url), settings.origins.get("database_url", "user")
    data_dir = Path(platformdirs.user_data_dir("tokend", appauthor=False))
    return sqlite_url(data_dir / DEFAULT_DB_FILENAME), "default"


def _shown(url: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url if "@" not in url else "(an unparsable URL)"


def _write_text(out: TextIO, report: dict[str, Any]) -> None:
    say(out, f"tokend settings for {report['workspace']}", "bold")
    out.write("\n")
    write_table(
        out,
        [Column("setting"), Column("value"), Column("from")],
        [(row["key"], _toml(row["value"], row["key"]), _origin(row)) for row in report["settings"]],
    )
    out.write("\n")
    write_table(
        out,
        [Column("config file"), Column("path"), Column("")],
        [
            (
                f["layer"],
                f["path"] + (f" -> {f['resolvedPath']}" if f["resolvedPath"] != f["path"] else ""),
                "found" if f["exists"] else "not found",
            )
            for f in report["files"]
        ],
    )
    out.write("\n")
    write_table(
        out,
        [Column("data"), Column("")],
        [
            ("data dir", report["dataDir"]),
            ("database", f"{report['databaseUrl']}  ({ORIGIN_NAMES[report['databaseUrlSource']]})"),
            ("log dir", report["logDir"]),
        ],
    )
    for warning in report["warnings"]:
        say(out, f"warning: {warning}", "yellow")


def _origin(row: dict[str, Any]) -> Text | str:
    source, file = row["source"], row["file"]
    if "rejected" in row:  # the warning below says why
        refused = ORIGIN_NAMES.get(row["rejected"], row["rejected"])
        return Text(f"{ORIGIN_NAMES.get(source, source)} ({refused} value rejected)", "yellow")
    if source == "default":
        return Text("default", style="dim")
    return f"{ORIGIN_NAMES.get(source, source)} ({file})" if file else ORIGIN_NAMES[source]


def _toml(value: Any, key: str = "") -> str:
    """A value as it would be written in the TOML file; None (not set) in words."""
    if value is None:
        return "(automatic)" if key == "compaction.reserved" else "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)
