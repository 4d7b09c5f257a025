"""Every key of every config table, fed a good, a wrong-typed and an out-of-range value from real
TOML files on disk: the merged settings, the warnings and the origin of each value are compared
with a record (tests/unit/data/config_characterization.json), first made on main before the
config checks moved into each feature's dataclass; each change since is a deliberate one, listed
in the commit that made it ([checkpoints] applied, the user-wide settings refused from a
workspace, two clearer texts). Regenerate it only on purpose:
`python tests/unit/test_settings_config_characterization.py --record`, and say in the commit what changed.

The cases (section, key, good, wrong type, out of range) are written here by hand from the
documentation of each setting, not derived from the code that checks them.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tokend.adapters.config_files import merge_files, read_config_file

RECORD = Path(__file__).parent / "data" / "config_characterization.json"

# (section or "" for the top level, key, good value, wrong-typed value, out-of-range value).
# Where a setting has no range (a bool, a free string), the third value is another bad value.
KEYS: list[tuple[str, str, Any, Any, Any]] = [
    ("", "database_url", "sqlite:///elsewhere.db", 5, ""),
    ("", "idle_timeout_s", 300, "300", -1),
    ("", "log_level", "DEBUG", 3, "loud"),
    ("budget", "output_reserve_cap", 16_000, "16000", 0),
    ("budget", "safety_margin_ratio", 0.1, "0.1", 0.5),
    ("budget", "repo_map_divisor", 4, 4.0, 0),
    ("budget", "repo_map_min_tokens", 512, True, -1),
    ("budget", "repo_map_max_tokens", 8192, "8192", -1),
    ("budget", "repo_map_no_files_multiplier", 3, [3], 0),
    ("budget", "history_summary_divisor", 8, {"a": 1}, 0),
    ("budget", "history_summary_min_tokens", 512, 1.5, -5),
    ("budget", "history_summary_max_tokens", 9000, "9000", -1),
    ("compaction", "auto", False, "yes", 0),
    ("compaction", "reserved", 30_000, "big", -1),
    ("compaction", "prune", False, "no", 1),
    ("compaction", "protected_tools", ["skill", "todo"], "skill", [1]),
    ("compaction", "prune_protect_tokens", 1000, 1.5, -1),
    ("compaction", "prune_minimum_tokens", 2000, "2000", -1),
    ("compaction", "prune_policy", "eager", 1, "lazy"),
    ("context", "budget_injection", "native", 1, "sometimes"),
    ("context_editing", "enabled", True, "yes", 1),
    ("context_editing", "trigger_tokens", 30_000, "30000", 0),
    ("context_editing", "keep_tool_uses", 5, 5.0, -1),
    ("context_editing", "clear_at_least_tokens", 5_000, "5000", -1),
    ("context_editing", "exclude_tools", ["web_search"], "web_search", [1]),
    ("context_editing", "clear_tool_inputs", True, "true", 0),
    ("context_editing", "keep_thinking_turns", 2, "2", 0),
    ("context_editing", "keep_all_thinking", True, 1, "all"),
    ("spend", "session_usd", 5, "5", 0),
    ("spend", "workspace_daily_usd", 10.5, True, -1),
    ("spend", "user_daily_usd", 20, [20], -0.5),
    ("spend", "warn_ratio", 0.5, "0.5", 1.5),
    ("spend", "on_limit", "refuse", True, "stop"),
    ("spend", "timezone", "Europe/Paris", 5, "Mars/Olympus_Mons"),
    ("rate", "tpm_limit", 100_000, 100_000.0, 0),
    ("telemetry", "exporters", ["otlp", "console"], "otlp", ["zipkin"]),
    ("telemetry", "prometheus_listen", "127.0.0.1:9000", 9000, "0.0.0.0:9000"),
    ("telemetry", "otlp_endpoint", "https://collector/v1/metrics", 5, "ftp://collector"),
    ("telemetry", "export_interval_s", 10, "10", 0),
    ("telemetry", "metric_names", "claude_code", 1, "prometheus"),
    ("telemetry", "resource_attributes", {"team": "infra"}, ["team"], {"n": 1}),
    ("tool_output", "single_result_chars", 1000, "1000", 0),
    ("tool_output", "message_results_chars", 5000, 5000.5, 0),
    ("tool_output", "preview_chars", 0, "0", -1),
    ("tool_output", "middle_out_chars", 100, False, -1),
    ("tool_output", "middle_out_tools", ["Bash"], "Bash", [1, 2]),
    ("tool_output", "exempt_tools", [], "Read", [True]),
    ("checkpoints", "retention_days", 7, "7", -1),
    ("checkpoints", "max_file_bytes", 100, 1.5, -1),
    ("checkpoints", "max_turn_bytes", 1000, "1000", -1),
    ("summarizer", "chain", ["openai", "extractive"], "openai", []),
    ("summarizer", "openai_base_url", "http://127.0.0.1:11434/v1", 5, ["http://x"]),
    ("summarizer", "openai_model", ["small", "big"], 5, [""]),
    ("summarizer", "openai_api_key_env", "MY_KEY", 5, "sk-abc123!"),
    ("summarizer", "anthropic_base_url", "https://api.example/v1", True, {"u": 1}),
    ("summarizer", "anthropic_model", "claude-x", 1.5, ["a", 2]),
    ("summarizer", "anthropic_api_key_env", "ANT_KEY", 5, "1KEY"),
    ("summarizer", "timeout_s", 30, "30", 601),
    ("handoff", "max_files", 5, "5", -1),
    ("handoff", "file_tokens", 1000, 1000.0, -1),
    ("statusline", "segments", ["cost", "model"], "cost", ["speed"]),
    ("status", "start_daemon", False, "no", 0),
]
# What a workspace's file may not set (it is warned and ignored): whole tables, or one key.
USER_ONLY = {
    "status",
    "telemetry",
    "summarizer",
    "checkpoints",
    "rate",
    "database_url",
    "idle_timeout_s",
    "spend.user_daily_usd",
    "spend.timezone",
}


def _user_only(section: str, key: str) -> bool:
    return bool({section, key, f"{section}.{key}"} & USER_ONLY)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


def _document(doc: dict[str, Any]) -> str:
    top = [f"{key} = {_toml(v)}" for key, v in doc.items() if not isinstance(v, dict)]
    tables = [
        f"[{name}]\n" + "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in table.items())
        for name, table in doc.items()
        if isinstance(table, dict)
    ]
    return "\n".join(top) + "\n" + "\n".join(tables)


def _layer(section: str, values: dict[str, Any]) -> dict[str, Any]:
    return {section: values} if section else dict(values)


def _cases() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Case name -> (user document, workspace document)."""
    cases: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for section, key, good, wrong, out in KEYS:
        name = f"{section or 'top'}.{key}"
        cases[f"{name} good"] = (_layer(section, {key: good}), {})
        if _user_only(section, key) and key != "database_url":
            cases[f"{name} set by the workspace"] = ({}, _layer(section, {key: good}))
        for kind, bad in (("wrong type", wrong), ("out of range", out)):
            if _user_only(section, key):
                cases[f"{name} {kind}"] = (_layer(section, {key: bad}), {})
            else:  # the user's good value is what the workspace's bad one falls back to
                cases[f"{name} {kind}"] = (
                    _layer(section, {key: good}),
                    _layer(section, {key: bad}),
                )
    sections = dict.fromkeys(section for section, *_ in KEYS)
    for section in sections:
        rows = [row for row in KEYS if row[0] == section]
        goods = {key: good for _, key, good, _, _ in rows}
        name = section or "top"
        # One bad key among good ones: the others still apply.
        first = rows[0][1]
        cases[f"{name} all good but {first}"] = (_layer(section, {**goods, first: rows[0][3]}), {})
        if section not in USER_ONLY:
            wrongs = {key: wrong for _, key, _, wrong, _ in rows if key != "database_url"}
            cases[f"{name} workspace all wrong"] = (_layer(section, goods), _layer(section, wrongs))
        cases[f"{name} unknown key"] = (_layer(section, {"colour": "red", **goods}), {})
    cases["budget min above max"] = ({"budget": {"repo_map_min_tokens": 5000}}, {})
    cases["budget workspace min above user max"] = (
        {"budget": {"history_summary_max_tokens": 2000}},
        {"budget": {"history_summary_min_tokens": 3000}},
    )
    cases["section given as a value"] = ({"budget": 5, "spend": "x", "checkpoints": [1]}, {})
    cases["workspace sets user-only tables"] = (
        {},
        {"telemetry": {"exporters": ["otlp"]}, "summarizer": {"chain": ["openai"]}},
    )
    cases["workspace sets [checkpoints]"] = (
        {"checkpoints": {"retention_days": 7}},
        {"checkpoints": {"retention_days": 1, "max_file_bytes": 0}},
    )
    cases["workspace sets database_url"] = (
        {"database_url": "sqlite:///mine.db"},
        {"database_url": "sqlite:///evil.db"},
    )
    cases["models merge key by key"] = (
        {"models": {"m": {"context_window": 8000, "max_output_tokens": 1000}}},
        {"models": {"m": {"context_window": 16000}, "n": {"context_window": 4000}}},
    )
    cases["typos"] = (
        {"budgets": {}, "idle_timeout": 5, "spend": {"session_usd": 1, "sesion_usd": 2}},
        {"compaction": {"protected_tool": ["x"]}},
    )
    cases["models bad"] = ({"models": {"m": 5}}, {"models": 5})
    return cases


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A config as dotted key -> JSON value (tuples as lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            out.update(_flat(getattr(value, f.name), f"{prefix}{f.name}."))
        return out
    if isinstance(value, tuple):
        value = list(value)
    return {prefix[:-1]: value}


def _observe(tmp: Path, user: dict[str, Any], workspace: dict[str, Any]) -> dict[str, Any]:
    """What the merge makes of the two documents written as files: the settings that differ
    from the defaults, the warnings (file paths as USER / WORKSPACE) and the origins."""
    user_file, workspace_file = tmp / "config.toml", tmp / ".tokend.toml"
    user_file.write_text(_document(user))
    workspace_file.write_text(_document(workspace))
    files = [read_config_file("user", user_file), read_config_file("workspace", workspace_file)]
    merged = merge_files(files, environ={})
    defaults = _flat(type(merged.config)())
    changed = {k: v for k, v in _flat(merged.config).items() if defaults[k] != v}
    warnings = [
        w.replace(str(workspace_file), "WORKSPACE").replace(str(user_file), "USER")
        for w in merged.warnings
    ]
    return {
        "config": changed,
        "warnings": warnings,
        "origins": dict(sorted(merged.origins.items())),
    }


def _record(tmp: Path) -> dict[str, Any]:
    return {name: _observe(tmp, *docs) for name, docs in _cases().items()}


@pytest.mark.parametrize("name", list(_cases()))
def test_each_case_merges_as_recorded(name: str, tmp_path: Path) -> None:
    expected = json.loads(RECORD.read_text())[name]
    assert _observe(tmp_path, *_cases()[name]) == expected


def test_the_record_has_every_case_and_no_other() -> None:
    assert set(json.loads(RECORD.read_text())) == set(_cases())


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(_record(Path(tmp)), indent=1, sort_keys=True) + "\n")
