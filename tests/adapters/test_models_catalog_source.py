"""The two file readers behind the catalog and config: the catalog JSON and the TOML layers.

Real files in tmp_path; XDG folders point into tmp (tests/conftest.py), so platformdirs finds the
test's own user config.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from tokend.adapters import catalog_source
from tokend.adapters.catalog_source import (
    LitellmEntries,
    find_catalog_json,
    load_catalog,
)
from tokend.adapters.config_files import (
    load_config,
    read_user_config,
    read_workspace_config,
    user_config_path,
)
from tokend.core.errors import UnknownModel


def test_the_checkouts_catalog_is_found_and_litellm_is_not_installed() -> None:
    import importlib.util

    path = find_catalog_json()
    assert path is not None, "server/tokend/data/ is missing: run scripts/bootstrap"
    assert path.name == "model_prices_and_context_window_backup.json"
    assert importlib.util.find_spec("litellm") is None  # bootstrap takes two files, not litellm
    assert load_catalog().get("gpt-4o").context_window == 128_000


def test_entries_are_read_once_even_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m": {"mode": "chat", "max_input_tokens": 1000}}))
    entries = LitellmEntries(path)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(entries.get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(mapping) for mapping in seen}) == 1
    path.unlink()  # read already: a later get does not need the file
    assert entries.get()["m"]["max_input_tokens"] == 1000


def test_the_packaged_catalog_is_the_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packaged = tmp_path / "tokend" / "data" / "model_prices_and_context_window_backup.json"
    packaged.parent.mkdir(parents=True)
    packaged.write_text(json.dumps({"packaged-llm": {"mode": "chat", "max_input_tokens": 9000}}))
    monkeypatch.setattr(catalog_source, "packaged_catalog", lambda: packaged)
    assert find_catalog_json() == packaged
    assert load_catalog(entries=LitellmEntries()).get("packaged-llm").context_window == 9000


def test_no_catalog_at_all_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(catalog_source, "packaged_catalog", lambda: None)
    with caplog.at_level(logging.WARNING):
        catalog = load_catalog(entries=LitellmEntries())
    assert "was not found" in caplog.text and "pipx" in caplog.text
    with pytest.raises(UnknownModel) as caught:
        catalog.get("gpt-4o")
    assert "catalog itself is missing" in caught.value.message
    assert "scripts/bootstrap" in caught.value.message


def test_missing_json_leaves_only_configured_models(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entries = LitellmEntries(tmp_path / "absent.json")
    user = {"models": {"my-llm": {"context_window": 32_000, "max_output_tokens": 4000}}}
    with caplog.at_level(logging.WARNING):
        catalog = load_catalog(user, {}, entries=entries)
    assert catalog.get("my-llm").context_window == 32_000
    with pytest.raises(UnknownModel):
        catalog.get("gpt-4o")
    assert "absent.json" in caplog.text


def test_corrupt_json_is_a_warning_not_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "prices.json"
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        assert dict(LitellmEntries(path).get()) == {}
    assert "could not read" in caplog.text


def test_workspace_model_table_beats_user_table_beats_litellm(tmp_path: Path) -> None:
    user_path = user_config_path()
    user_path.parent.mkdir(parents=True)
    user_path.write_text(
        '[models."claude-opus-4-6"]\ncontext_window = 200000\nmax_output_tokens = 32000\n'
    )
    (tmp_path / ".tokend.toml").write_text('[models."claude-opus-4-6"]\ncontext_window = 500000\n')
    catalog = load_catalog(read_user_config(), read_workspace_config(tmp_path))
    info = catalog.get("anthropic/claude-opus-4-6")
    assert (info.context_window, info.max_output_tokens) == (500_000, 32_000)
    assert load_catalog(read_user_config(), {}).get("claude-opus-4-6").context_window == 200_000


def test_load_config_layers_the_two_files(tmp_path: Path) -> None:
    user_path = user_config_path()
    user_path.parent.mkdir(parents=True)
    user_path.write_text('log_level = "debug"\n[budget]\noutput_reserve_cap = 16000\n')
    (tmp_path / ".tokend.toml").write_text("[budget]\noutput_reserve_cap = 8000\n")
    config, warnings = load_config(tmp_path)
    assert warnings == []
    assert (config.log_level, config.budget.output_reserve_cap) == ("debug", 8000)


def test_bad_toml_is_a_warning_and_defaults(tmp_path: Path) -> None:
    (tmp_path / ".tokend.toml").write_text("[budget\noutput_reserve_cap = ")
    config, warnings = load_config(tmp_path)
    assert config.budget.output_reserve_cap == 32_000
    assert len(warnings) == 1 and ".tokend.toml" in warnings[0]
    assert read_workspace_config(tmp_path) == {}


def test_database_url_comes_from_the_environment_first(tmp_path: Path) -> None:
    user_path = tmp_path / "config.toml"
    user_path.write_text('database_url = "sqlite:///from-file.db"\n')
    config, _ = load_config(None, user_path=user_path, environ={})
    assert config.database_url == "sqlite:///from-file.db"
    environ = {"TOKEND_DATABASE_URL": "sqlite:///from-env.db"}
    config, _ = load_config(None, user_path=user_path, environ=environ)
    assert config.database_url == "sqlite:///from-env.db"
