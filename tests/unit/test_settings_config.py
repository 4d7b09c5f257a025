"""Config layers: workspace beats user beats defaults; bad values warn and keep what was there."""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.budget.limits import BudgetConfig, CompactionConfig
from tokend.core.config_rules import field_types
from tokend.core.models.catalog import ModelInfo
from tokend.core.settings.config import ConfigLayer, merge_config, merge_layers
from tokend.core.settings.tables import TokendConfig, room_problems


def test_empty_layers_give_the_documented_defaults() -> None:
    config, warnings = merge_config(TokendConfig(), {}, {})
    assert warnings == []
    assert config == TokendConfig()
    assert (config.idle_timeout_s, config.log_level, config.database_url) == (60, "info", None)


def test_every_budget_and_compaction_field_is_configurable() -> None:
    assert set(field_types(BudgetConfig)) == {f.name for f in fields(BudgetConfig)}
    assert set(field_types(CompactionConfig)) == {f.name for f in fields(CompactionConfig)}


def test_workspace_beats_user_beats_defaults() -> None:
    user = {
        "log_level": "DEBUG",
        "idle_timeout_s": 300,
        "budget": {"output_reserve_cap": 16_000, "safety_margin_ratio": 0.1},
        "compaction": {"reserved": 30_000, "protected_tools": ["skill", "todo"]},
    }
    workspace = {"budget": {"output_reserve_cap": 8000}, "compaction": {"auto": False}}
    config, warnings = merge_config(TokendConfig(), user, workspace)
    assert warnings == []
    assert config.log_level == "debug"
    assert config.idle_timeout_s == 300
    assert config.budget.output_reserve_cap == 8000  # workspace
    assert config.budget.safety_margin_ratio == 0.1  # user
    assert config.budget.repo_map_max_tokens == 4096  # default
    assert config.compaction == CompactionConfig(
        auto=False, reserved=30_000, protected_tools=("skill", "todo")
    )


def test_model_tables_merge_key_by_key() -> None:
    user = {"models": {"claude-opus-4-6": {"context_window": 200_000, "max_output_tokens": 64_000}}}
    workspace = {
        "models": {
            "claude-opus-4-6": {"context_window": 1_000_000},
            "mine": {"context_window": 8000},
        }
    }
    config, warnings = merge_config(TokendConfig(), user, workspace)
    assert warnings == []
    assert config.models == {
        "claude-opus-4-6": {"context_window": 1_000_000, "max_output_tokens": 64_000},
        "mine": {"context_window": 8000},
    }


def test_invalid_values_are_reported_and_the_lower_layer_value_kept() -> None:
    user = {"budget": {"output_reserve_cap": 20_000}}
    workspace = {
        "budget": {"output_reserve_cap": -1, "safety_margin_ratio": 2, "colour": "red"},
        "compaction": {"auto": "yes"},
        "log_level": "loud",
        "idle_timeout_s": True,
        "models": {"x": 5},
    }
    config, warnings = merge_config(TokendConfig(), user, workspace, sources=("u.toml", "w.toml"))
    assert config.budget.output_reserve_cap == 20_000  # the user's value survives
    assert config.budget.safety_margin_ratio == 0.05
    assert config.compaction.auto is True
    assert (config.log_level, config.idle_timeout_s, config.models) == ("info", 60, {})
    assert len(warnings) == 7
    assert all(w.startswith("w.toml: ") for w in warnings)
    assert any("output_reserve_cap = -1 is invalid" in w and "using 20000" in w for w in warnings)


def test_min_above_max_keeps_the_previous_range() -> None:
    user = {"budget": {"repo_map_min_tokens": 5000}}
    config, warnings = merge_config(TokendConfig(), user, {})
    assert (config.budget.repo_map_min_tokens, config.budget.repo_map_max_tokens) == (1024, 4096)
    assert len(warnings) == 1 and "repo_map_min_tokens is above repo_map_max_tokens" in warnings[0]


def test_a_workspace_cannot_move_the_database() -> None:
    config, warnings = merge_config(
        TokendConfig(), {"database_url": "sqlite:///mine.db"}, {"database_url": "sqlite:///evil.db"}
    )
    assert config.database_url == "sqlite:///mine.db"
    assert len(warnings) == 1 and "database_url" in warnings[0]


def test_checkpoint_settings_come_from_the_user_config_only() -> None:
    """protocol.md documents [checkpoints]; on main the table was "not a known setting"."""
    user = {"checkpoints": {"retention_days": 3, "max_file_bytes": 1024}}
    config, warnings = merge_config(TokendConfig(), user, {}, sources=("u.toml", "w.toml"))
    assert warnings == []
    assert (config.checkpoints.retention_days, config.checkpoints.max_file_bytes) == (3, 1024)
    config, warnings = merge_config(
        TokendConfig(), user, {"checkpoints": {"retention_days": 0}}, sources=("u", "w.toml")
    )
    assert config.checkpoints.retention_days == 3
    [warning] = warnings
    assert warning.startswith("w.toml: [checkpoints] is read from the user config only")


def test_a_likely_typo_names_the_setting_meant() -> None:
    _, warnings = merge_config(
        TokendConfig(),
        {"budget": {"output_reserve": 8000, "colour": "red"}, "idle_timeout": 5},
        {},
        sources=("u.toml", "w.toml"),
    )
    assert warnings == [
        "u.toml: [budget] output_reserve is not a known setting (did you mean "
        "output_reserve_cap?); ignored",
        "u.toml: [budget] colour is not a known setting; ignored",
        "u.toml: idle_timeout is not a known setting (did you mean idle_timeout_s?); ignored",
    ]


def test_a_table_where_a_value_belongs_is_reported() -> None:
    config, warnings = merge_config(TokendConfig(), {"budget": 5, "compaction": [1]}, {})
    assert config == TokendConfig()
    assert len(warnings) == 2


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
keys = st.sampled_from(
    ["budget", "compaction", "models", "log_level", "idle_timeout_s", "database_url", "other"]
)


@given(
    user=st.dictionaries(keys, json_values, max_size=4),
    workspace=st.dictionaries(keys, json_values, max_size=4),
)
def test_any_document_merges_without_raising_into_a_valid_config(
    user: dict, workspace: dict
) -> None:
    config, warnings = merge_config(TokendConfig(), user, workspace)
    assert isinstance(warnings, list)
    assert config.budget.output_reserve_cap >= 1
    assert 0 <= config.budget.safety_margin_ratio < 0.5
    assert config.budget.repo_map_min_tokens <= config.budget.repo_map_max_tokens
    assert config.log_level in ("debug", "info", "warning", "error")
    assert all(isinstance(t, dict) for t in config.models.values())


def test_origins_name_the_layer_that_set_each_value() -> None:
    user = {"budget": {"output_reserve_cap": 16_000}, "idle_timeout_s": 300}
    workspace = {
        "budget": {"output_reserve_cap": 8000, "safety_margin_ratio": 2},  # 2 is invalid
        "models": {"mine": {"context_window": 8000}},
    }
    merged = merge_layers(
        TokendConfig(),
        [ConfigLayer("user", "u.toml", user), ConfigLayer("workspace", "w.toml", workspace)],
    )
    assert merged.origins == {
        "budget.output_reserve_cap": "workspace",
        "idle_timeout_s": "user",
        'models."mine".context_window': "workspace",
    }  # safety_margin_ratio kept its default: no origin
    assert len(merged.warnings) == 1


def test_a_range_reset_forgets_the_origin_of_both_ends() -> None:
    merged = merge_layers(
        TokendConfig(),
        [ConfigLayer("user", "u.toml", {"budget": {"repo_map_min_tokens": 9000}})],
    )
    assert merged.origins == {}


def _model(window: int, output: int, input_limit: int | None = None) -> ModelInfo:
    return ModelInfo("m", None, window, output, input_limit=input_limit)


def test_a_window_the_reserves_fill_leaves_no_room() -> None:
    assert room_problems(_model(200_000, 64_000), TokendConfig()) == []
    [problem] = room_problems(_model(4000, 4000), TokendConfig())
    assert "context_window 4,000 leaves no room for input" in problem
    assert "output_reserve_cap" in problem and "safety_margin_ratio" in problem


def test_a_reserved_as_large_as_the_window_would_compact_every_request() -> None:
    config, _ = merge_config(TokendConfig(), {"compaction": {"reserved": 200_000}}, {})
    [problem] = room_problems(_model(200_000, 64_000), config)
    assert "every request would compact" in problem
    quiet, _ = merge_config(
        TokendConfig(), {"compaction": {"reserved": 200_000, "auto": False}}, {}
    )
    assert room_problems(_model(200_000, 64_000), quiet) == []


def test_an_input_limit_beyond_the_window_is_reported() -> None:
    [problem] = room_problems(_model(100_000, 8000, input_limit=150_000), TokendConfig())
    assert "input_limit 150,000 is above context_window 100,000" in problem


def _documented_tables() -> dict[str, list[str]]:
    """Table -> its keys, from the hand-written list of the characterization test."""
    from tests.unit.test_settings_config_characterization import KEYS

    tables: dict[str, list[str]] = {}
    for section, key, *_ in KEYS:
        if section:
            tables.setdefault(section, []).append(key)
    return tables


TABLES = _documented_tables()
table_documents = st.fixed_dictionaries(
    {},
    optional={
        name: st.dictionaries(st.sampled_from(keys), json_values, max_size=len(keys))
        for name, keys in TABLES.items()
    },
)


def _as_toml(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


@given(user=table_documents)
def test_a_value_applied_is_the_value_given_never_a_conversion(user: dict) -> None:
    """Every setting either keeps its default or is exactly what the file said (a list for a
    tuple): "5" never becomes 5, 1 never becomes True, a string never a list of letters."""
    config, warnings = merge_config(TokendConfig(), user, {})
    defaults = TokendConfig()
    given_count = sum(len(table) for table in user.values())
    applied = 0
    for name, table in user.items():
        for key, value in table.items():
            got = getattr(getattr(config, name), key)
            same = _as_toml(got) == value and type(_as_toml(got)) is type(value)
            if got is getattr(getattr(defaults, name), key) and not same:
                continue  # kept the default: a warning says why
            assert same
            applied += 1
    assert applied + len(warnings) >= given_count  # each key applied or warned about


def test_the_merge_and_the_rules_import_no_feature() -> None:
    """core/settings/config.py (the merge) and core/config_rules.py (the rules) know no table: each
    feature's dataclass carries its own rules. On main core/settings/config.py imported eight features
    for their check tables."""
    import ast
    from pathlib import Path

    core = Path(__file__).resolve().parents[2] / "server" / "tokend" / "core"
    for name, allowed in (
        ("settings/config.py", {"tokend.core.config_rules"}),
        ("config_rules.py", set()),
    ):
        tree = ast.parse((core / name).read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tokend")
        } | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if alias.name.startswith("tokend")
        }
        assert imported <= allowed, (name, imported)
