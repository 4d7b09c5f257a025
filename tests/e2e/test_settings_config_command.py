"""`tokend config`: what applies in a workspace and where each value comes from, on real files
(the user's config under a temporary XDG_CONFIG_HOME)."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import tokend_env
from tests.in_process import tokend_cli
from tokend.commands.config import run_config
from tokend.core.errors import InvalidParams


@pytest.fixture
def user_file(isolated_dirs: Path) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        'idle_timeout_s = 120\ndatabase_url = "postgresql://me:hunter2@db.example/tokend"\n'
        "[budget]\noutput_reserve_cap = 16000\n"
    )
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".tokend.toml").write_text(
        "[budget]\noutput_reserve_cap = 8000\nsafety_margin_ratio = 0.9\n"
        '[models."acme-coder-7"]\ncontext_window = 64000\n'
    )
    return folder


def _config(workspace: Path | None, *, as_json: bool, database_url: str | None = None) -> str:
    out = io.StringIO()
    args = argparse.Namespace(json=as_json, workspace=workspace, database_url=database_url)
    assert run_config(args, out) == 0
    return out.getvalue()


def test_json_names_the_origin_of_every_value(user_file: Path, workspace: Path) -> None:
    report = json.loads(_config(workspace, as_json=True))
    settings = {row["key"]: row for row in report["settings"]}
    workspace_file = str(workspace / ".tokend.toml")
    assert settings["budget.output_reserve_cap"] == {
        "key": "budget.output_reserve_cap",
        "value": 8000,
        "source": "workspace",
        "file": workspace_file,
    }
    assert settings["idle_timeout_s"]["source"] == "user"
    assert settings["idle_timeout_s"]["file"] == str(user_file)
    assert settings["budget.safety_margin_ratio"]["value"] == 0.05  # 0.9 is invalid
    assert settings["budget.safety_margin_ratio"]["source"] == "default"
    assert settings["compaction.protected_tools"]["value"] == ["skill"]
    assert settings['models."acme-coder-7".context_window']["source"] == "workspace"
    assert report["files"] == [
        {"layer": "user", "path": str(user_file), "resolvedPath": str(user_file), "exists": True},
        {
            "layer": "workspace",
            "path": workspace_file,
            "resolvedPath": workspace_file,
            "exists": True,
        },
    ]
    assert report["databaseUrl"] == "postgresql://me:***@db.example/tokend"
    assert report["databaseUrlSource"] == "user"
    assert report["dataDir"] == str(Path(os.environ["XDG_DATA_HOME"]) / "tokend")
    [warning] = report["warnings"]
    assert warning.startswith(f"{workspace_file}: [budget] safety_margin_ratio = 0.9 is invalid")
    assert all(key[0].islower() and "_" not in key for key in report)


def test_the_database_url_of_the_command_line_and_environment_wins(
    user_file: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEND_DATABASE_URL", "sqlite:////tmp/env.db")
    report = json.loads(_config(workspace, as_json=True))
    assert (report["databaseUrl"], report["databaseUrlSource"]) == (
        "sqlite:////tmp/env.db",
        "environment",
    )
    report = json.loads(_config(workspace, as_json=True, database_url="sqlite:////tmp/cli.db"))
    assert report["databaseUrlSource"] == "command line"


def test_without_any_file_everything_is_a_default(tmp_path: Path, isolated_dirs: Path) -> None:
    report = json.loads(_config(tmp_path, as_json=True))
    assert {row["source"] for row in report["settings"]} == {"default"}
    assert [f["exists"] for f in report["files"]] == [False, False]
    user_path = Path(report["files"][0]["path"])
    assert user_path == Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    expected_db = Path(os.environ["XDG_DATA_HOME"]) / "tokend" / "tokend.sqlite3"
    assert report["databaseUrl"] == f"sqlite:///{expected_db}"
    assert report["warnings"] == []
    assert not expected_db.parent.exists()  # showing the settings creates nothing


def test_the_table_shows_values_with_their_file(user_file: Path, workspace: Path) -> None:
    text = _config(workspace, as_json=False)
    lines = text.splitlines()
    [reserve] = [line for line in lines if line.startswith("budget.output_reserve_cap ")]
    assert reserve.split()[1] == "8000"
    assert reserve.endswith(f"workspace file ({workspace / '.tokend.toml'})")
    [timeout] = [line for line in lines if line.startswith("idle_timeout_s ")]
    assert timeout.endswith(f"user config ({user_file})")
    assert "hunter2" not in text
    assert f"warning: {workspace / '.tokend.toml'}: [budget] safety_margin_ratio" in text


def test_a_workspace_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidParams, match="not a directory"):
        _config(tmp_path / "missing", as_json=True)


def test_the_cli_runs_it_in_the_current_directory(user_file: Path, workspace: Path) -> None:
    shown = tokend_cli("config", "--json", cwd=workspace, env=tokend_env())
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["workspace"] == str(workspace)
    assert {r["key"]: r["value"] for r in report["settings"]}["budget.output_reserve_cap"] == 8000


def test_every_table_is_shown_and_read(isolated_dirs: Path, tmp_path: Path) -> None:
    """Every documented table applies from the user's file and `tokend config` (the real CLI)
    lists each of its settings. On main [checkpoints] was "not a known setting" although
    protocol.md documents it, and only [budget] and [compaction] were listed."""
    from tests.unit.test_settings_config_characterization import KEYS

    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(
        "[checkpoints]\nretention_days = 3\n"
        "[spend]\nsession_usd = 5\n"
        '[telemetry]\nresource_attributes = { team = "infra" }\n'
    )
    shown = _tokend_config(tmp_path, "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["warnings"] == []
    rows = {row["key"]: row for row in report["settings"]}
    documented = {f"{section}.{key}" if section else key for section, key, *_ in KEYS}
    assert set(rows) == documented - {"database_url"}  # shown apart, as databaseUrl
    assert rows["checkpoints.retention_days"] == {
        "key": "checkpoints.retention_days",
        "value": 3,
        "source": "user",
        "file": str(user_file),
    }
    assert (rows["spend.session_usd"]["value"], rows["spend.session_usd"]["source"]) == (5, "user")
    assert rows["telemetry.resource_attributes"]["value"] == {"team": "infra"}
    assert rows["spend.user_daily_usd"] == {
        "key": "spend.user_daily_usd",
        "value": None,
        "source": "default",
        "file": None,
    }
    text = _tokend_config(tmp_path).stdout
    [line] = [line for line in text.splitlines() if line.startswith("telemetry.resource_attr")]
    assert '{team = "infra"}' in line
    [line] = [line for line in text.splitlines() if line.startswith("compaction.reserved ")]
    assert "(automatic)" in line


def test_a_rejected_value_is_marked_rejected_beside_the_value_in_effect(tmp_path: Path) -> None:
    """`tokend config` showed a refused value's row as plain `default`, as if the file did not
    set it; the row now says the user's value was rejected (the warning says why)."""
    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text('[statusline]\nsegments = "model,speed"\n\n[spend]\nsession_usd = 5\n')
    shown = _tokend_config(tmp_path, "--json")
    assert shown.returncode == 0, shown.stderr
    rows = {row["key"]: row for row in json.loads(shown.stdout)["settings"]}
    segments = rows["statusline.segments"]
    assert segments["source"] == "default" and segments["rejected"] == "user"
    assert segments["value"] == [
        "model",
        "context",
        "threshold",
        "cost",
        "rate",
        "cache",
        "compactions",
    ]
    assert "rejected" not in rows["spend.session_usd"]  # accepted: no mark
    text = _tokend_config(tmp_path, COLUMNS="200").stdout
    row = next(line for line in text.splitlines() if line.startswith("statusline.segments"))
    assert row.rstrip().endswith("default (user config value rejected)"), row
    assert "segments = 'model,speed' is invalid" in text


def _tokend_config(workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`tokend config ARGS --workspace WORKSPACE` as a user runs it."""
    return tokend_cli(
        "config", *args, "--workspace", str(workspace), cwd=workspace, env=tokend_env(**env)
    )
