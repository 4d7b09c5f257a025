"""Whether a cold `tokend status` starts the daemon: TOKEND_START_DAEMON, else the user config's
`[status] start_daemon` (a value the settings refuse leaves it on, as the settings do). Oracle:
what `tokend config` says is in effect for the same file (core.settings.config's merge of it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tokend.adapters import store_peek
from tokend.adapters.config_files import load_config
from tokend.commands.status_start import start_wanted


@pytest.mark.parametrize("value", ["false", "true", '"no"', "0"])
def test_the_config_key_as_the_settings_read_it(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOKEND_START_DAEMON", raising=False)
    monkeypatch.setattr(store_peek, "_USER_CONFIG", {})
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(f"[status]\nstart_daemon = {value}\n")
    assert start_wanted() == load_config(None)[0].status.start_daemon


@pytest.mark.parametrize(
    ("value", "wanted"), [("0", False), ("off", False), ("False", False), ("1", True), ("", True)]
)
def test_the_environment_wins(value: str, wanted: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_peek, "_USER_CONFIG", {})
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text("[status]\nstart_daemon = true\n")
    monkeypatch.setenv("TOKEND_START_DAEMON", value)
    assert start_wanted() is wanted
