"""WorkspaceSettings on real files: the user's config.toml (under XDG_CONFIG_HOME, as the
platform resolves it) and a workspace's .tokend.toml, re-read when they change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tokend.adapters.catalog_source import LitellmEntries
from tokend.adapters.workspace_settings import Settings, WorkspaceSettings
from tokend.core.budget.limits import autocompact_threshold
from tokend.core.errors import UnknownModel

# One litellm-shaped entry: the tests never depend on the installed litellm's figures.
CLAUDE = {
    "claude-sonnet-4-5": {
        "mode": "chat",
        "litellm_provider": "anthropic",
        "max_input_tokens": 200_000,
        "max_output_tokens": 64_000,
        "input_cost_per_token": 3e-06,
        "output_cost_per_token": 1.5e-05,
    }
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def user_file(isolated_dirs: Path) -> Path:
    """Where the platform puts the user's config: $XDG_CONFIG_HOME/tokend/config.toml."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


@pytest.fixture
def entries(tmp_path: Path) -> LitellmEntries:
    path = tmp_path / "litellm.json"
    path.write_text(json.dumps(CLAUDE))
    return LitellmEntries(path)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "my project"  # a space: the URI is percent-encoded
    folder.mkdir()
    return folder


def _write(path: Path, text: str) -> None:
    """Write and move the mtime on: some filesystems stamp whole seconds."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def _threshold(settings: Settings, model: str) -> int:
    config = settings.config
    return autocompact_threshold(settings.catalog.get(model), config.compaction, config.budget)


def test_a_workspace_file_applies_to_that_workspace_only(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    # The daemon's bug: one config for all, so [compaction] of .tokend.toml was ignored
    # (168,000 under the daemon, 150,000 standalone, for a 200k Claude window).
    _write(workspace / ".tokend.toml", "[compaction]\nreserved = 50000\n")
    settings = WorkspaceSettings(entries=entries)
    mine = settings.for_workspace(workspace.as_uri())
    assert _threshold(mine, "claude-sonnet-4-5") == 150_000
    assert _threshold(settings.for_workspace(None), "claude-sonnet-4-5") == 168_000
    assert _threshold(settings.for_workspace("file:///elsewhere"), "claude-sonnet-4-5") == 168_000
    assert mine.origins["compaction.reserved"] == "workspace"
    assert mine.warnings == ()


def test_the_user_file_is_found_under_xdg_config_home(
    user_file: Path, entries: LitellmEntries
) -> None:
    _write(user_file, "idle_timeout_s = 300\n[budget]\noutput_reserve_cap = 16000\n")
    settings = WorkspaceSettings(entries=entries).for_workspace(None)
    assert settings.config.idle_timeout_s == 300
    assert settings.config.budget.output_reserve_cap == 16_000
    [source] = settings.sources
    assert (source.layer, source.path, source.exists) == ("user", user_file, True)
    assert settings.origins == {"idle_timeout_s": "user", "budget.output_reserve_cap": "user"}


def test_a_model_declared_while_running_is_known_a_second_later(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    clock = FakeClock()
    settings = WorkspaceSettings(entries=entries, clock=clock)
    uri = workspace.as_uri()
    with pytest.raises(UnknownModel):
        settings.for_workspace(uri).catalog.get("my-local-model")
    _write(
        workspace / ".tokend.toml",
        '[models."my-local-model"]\ncontext_window = 32768\nmax_output_tokens = 4096\n',
    )
    clock.now += 0.5  # within the second: not looked at yet
    with pytest.raises(UnknownModel):
        settings.for_workspace(uri).catalog.get("my-local-model")
    clock.now += 0.6
    assert settings.for_workspace(uri).catalog.get("my-local-model").context_window == 32_768


def test_a_change_to_the_user_file_reaches_every_workspace(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    clock = FakeClock()
    settings = WorkspaceSettings(entries=entries, clock=clock)
    before = settings.for_workspace(workspace.as_uri())
    assert before.config.log_level == "info"
    _write(user_file, 'log_level = "debug"\n[models."tiny"]\ncontext_window = 50000\n')
    clock.now += 1.0
    after = settings.for_workspace(workspace.as_uri())
    assert after.config.log_level == "debug"
    assert after.catalog.get("tiny").context_window == 50_000
    assert settings.for_workspace(None).catalog.get("tiny").context_window == 50_000


def test_files_are_statted_at_most_once_a_second(
    user_file: Path,
    entries: LitellmEntries,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    settings = WorkspaceSettings(entries=entries, clock=clock)
    uri = workspace.as_uri()
    settings.for_workspace(uri)
    statted: list[str] = []
    real_stat = os.stat

    def counting_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        statted.append(str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counting_stat)
    for _ in range(100):
        clock.now += 0.001
        settings.for_workspace(uri)
    assert statted == []
    clock.now += 1.0
    unchanged = settings.for_workspace(uri)
    assert sorted(statted) == sorted([str(user_file), str(workspace / ".tokend.toml")])
    assert settings.for_workspace(uri) is unchanged  # the same frozen Settings, not re-read


def test_invalid_values_warn_naming_file_and_key_and_keep_the_default(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    path = workspace / ".tokend.toml"
    _write(
        path,
        "[budget]\noutput_reserve_cap = -5\ncolour = 'red'\n"
        '[models."claude-sonnet-4-5"]\nmax_output_tokens = "lots"\n',
    )
    settings = WorkspaceSettings(entries=entries).for_workspace(workspace.as_uri())
    assert settings.config.budget.output_reserve_cap == 32_000
    assert len(settings.warnings) == 3
    assert all(w.startswith(f"{path}: ") for w in settings.warnings)
    text = "\n".join(settings.warnings)
    assert "[budget] output_reserve_cap = -5 is invalid" in text and "using 32000" in text
    assert "[budget] colour is not a known setting" in text
    assert "max_output_tokens = 'lots' is invalid" in text
    assert settings.catalog.get("claude-sonnet-4-5").max_output_tokens == 64_000


def test_a_model_window_that_leaves_no_room_is_reported(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    _write(
        user_file,
        '[models."small"]\ncontext_window = 4000\nmax_output_tokens = 4000\n'
        "[compaction]\nreserved = 250000\n",
    )
    settings = WorkspaceSettings(entries=entries).for_workspace(None)
    text = "\n".join(settings.warnings)
    assert f'{user_file}: [models."small"] context_window 4,000 leaves no room for input' in text
    assert "reserved = 250,000 is not below the input limit of 4,000 tokens" in text


def test_a_file_that_does_not_parse_is_one_warning_and_defaults(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    path = workspace / ".tokend.toml"
    _write(path, "[budget\noutput_reserve_cap = ")
    settings = WorkspaceSettings(entries=entries).for_workspace(workspace.as_uri())
    assert settings.config == WorkspaceSettings(entries=entries).for_workspace(None).config
    assert len(settings.warnings) == 1 and settings.warnings[0].startswith(f"{path}: not read")
    assert [(s.layer, s.exists) for s in settings.sources] == [("user", False), ("workspace", True)]


def test_only_new_warnings_are_passed_to_the_hook(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    clock = FakeClock()
    told: list[tuple[str | None, tuple[str, ...]]] = []
    settings = WorkspaceSettings(
        entries=entries, clock=clock, on_warnings=lambda uri, w: told.append((uri, w))
    )
    uri = workspace.as_uri()
    path = workspace / ".tokend.toml"
    _write(path, 'log_level = "loud"\n')
    settings.for_workspace(uri)
    assert len(told) == 1 and told[0][0] == uri and "log_level = 'loud'" in told[0][1][0]
    _write(path, 'log_level = "loud"\nidle_timeout_s = -1\n')
    clock.now += 1.0
    settings.for_workspace(uri)
    assert len(told) == 2 and len(told[1][1]) == 1 and "idle_timeout_s" in told[1][1][0]
    _write(path, "")  # fixed: nothing to tell
    clock.now += 1.0
    assert settings.for_workspace(uri).warnings == ()
    assert len(told) == 2


def test_the_database_url_comes_from_the_environment_before_the_user_file(
    user_file: Path, entries: LitellmEntries
) -> None:
    _write(user_file, 'database_url = "sqlite:///from-file.db"\n')
    from_file = WorkspaceSettings(entries=entries, environ={}).for_workspace(None)
    assert from_file.config.database_url == "sqlite:///from-file.db"
    assert from_file.origins["database_url"] == "user"
    environ = {"TOKEND_DATABASE_URL": "sqlite:///from-env.db"}
    from_env = WorkspaceSettings(entries=entries, environ=environ).for_workspace(None)
    assert from_env.config.database_url == "sqlite:///from-env.db"
    assert from_env.origins["database_url"] == "environment"


def test_workspaces_without_models_share_the_users_catalog(
    user_file: Path, entries: LitellmEntries, tmp_path: Path
) -> None:
    settings = WorkspaceSettings(entries=entries)
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _write(second / ".tokend.toml", "[budget]\noutput_reserve_cap = 8000\n")
    catalogs = {id(settings.for_workspace(f.as_uri()).catalog) for f in (first, second)}
    assert catalogs == {id(settings.for_workspace(None).catalog)}


def test_a_models_entry_that_is_not_a_table_is_one_warning(
    user_file: Path, entries: LitellmEntries
) -> None:
    _write(user_file, '[models]\n"odd" = 5\n')
    settings = WorkspaceSettings(entries=entries).for_workspace(None)
    assert settings.warnings == (f'{user_file}: [models."odd"] must be a table; ignored',)


def test_model_override_warnings_name_the_file_they_are_in(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    _write(user_file, '[models."claude-sonnet-4-5"]\ncolour = "red"\n')
    path = workspace / ".tokend.toml"
    _write(
        path, '[models."mine"]\ncontext_window = 9000\nmax_output_tokens = 1000\nflavour = "mint"\n'
    )
    settings = WorkspaceSettings(entries=entries).for_workspace(workspace.as_uri())
    assert [w.split(": ", 1)[0] for w in settings.warnings] == [str(user_file), str(path)]
    assert "colour" in settings.warnings[0] and "flavour" in settings.warnings[1]


def test_a_small_model_declared_without_max_output_tokens_leaves_no_room(
    user_file: Path, entries: LitellmEntries, workspace: Path
) -> None:
    # The output reserve is then output_reserve_cap (32,000), more than the whole window.
    path = workspace / ".tokend.toml"
    _write(path, '[models."mine"]\ncontext_window = 9000\n')
    settings = WorkspaceSettings(entries=entries).for_workspace(workspace.as_uri())
    [warning] = settings.warnings
    assert warning.startswith(f'{path}: [models."mine"] context_window 9,000 leaves no room')
