"""tokend's settings and how the user and workspace layers merge. Pure: the adapter reads TOML.

Layers, later wins: documented defaults < user config.toml < workspace .tokend.toml. An invalid
value is reported as a warning and the value of the layers below it (the default, when no layer
set it) is kept, so a typo never stops the daemon (jedi-language-server's habit).

Keys (TOML):
    database_url = "sqlite:///path/to/tokend.db"   # user layer only (and TOKEND_DATABASE_URL)
    idle_timeout_s = 60                            # seconds, >= 0
    log_level = "info"                             # debug | info | warning | error
    [budget]      # BudgetConfig fields, see tokend.core.budget
    [compaction]  # CompactionConfig fields: auto, reserved, prune, protected_tools, prune_*_tokens
    [models."NAME"]  # catalog overrides, see tokend.core.catalog.OVERRIDE_KEYS
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tokend.core.budget import BudgetConfig, CompactionConfig

LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True, slots=True)
class TokendConfig:
    """Merged settings. `database_url` None means the store's default SQLite file."""

    database_url: str | None = None
    budget: BudgetConfig = BudgetConfig()
    compaction: CompactionConfig = CompactionConfig()
    models: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> override table
    idle_timeout_s: float = 60
    log_level: str = "info"


Check = tuple[Callable[[Any], bool], str]


def _int(low: int) -> Check:
    def ok(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= low

    return ok, f"an integer >= {low}"


def _number(low: float, high: float) -> Check:
    def ok(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and low <= v < high

    return ok, f"a number from {low} up to (not including) {high}"


_BOOL: Check = (lambda v: isinstance(v, bool), "true or false")
_STRINGS: Check = (
    lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
    "a list of strings",
)

BUDGET_CHECKS: dict[str, Check] = {
    "output_reserve_cap": _int(1),
    "safety_margin_ratio": _number(0.0, 0.5),
    "repo_map_divisor": _int(1),
    "repo_map_min_tokens": _int(0),
    "repo_map_max_tokens": _int(0),
    "repo_map_no_files_multiplier": _int(1),
    "history_summary_divisor": _int(1),
    "history_summary_min_tokens": _int(0),
    "history_summary_max_tokens": _int(0),
}
COMPACTION_CHECKS: dict[str, Check] = {
    "auto": _BOOL,
    "reserved": _int(0),
    "prune": _BOOL,
    "protected_tools": _STRINGS,
    "prune_protect_tokens": _int(0),
    "prune_minimum_tokens": _int(0),
}
TOP_CHECKS: dict[str, Check] = {
    "database_url": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "idle_timeout_s": _number(0, float("inf")),
    "log_level": (lambda v: isinstance(v, str) and v.lower() in LOG_LEVELS, " | ".join(LOG_LEVELS)),
}


def _merge_table(
    current: Any, table: Any, checks: Mapping[str, Check], where: str, warnings: list[str]
) -> Any:
    """`current` (a config dataclass) with the valid keys of `table` applied."""
    if not isinstance(table, Mapping):
        warnings.append(f"{where} must be a table; ignored")
        return current
    changes: dict[str, Any] = {}
    for key, value in table.items():
        check = checks.get(key)
        if check is None:
            warnings.append(f"{where} {key} is not a known setting; ignored")
        elif not check[0](value):
            kept = getattr(current, key)
            warnings.append(
                f"{where} {key} = {value!r} is invalid (expected {check[1]}); using {kept!r}"
            )
        else:
            changes[key] = tuple(value) if isinstance(value, list) else value
    return replace(current, **changes)


def _check_ranges(
    budget: BudgetConfig, fallback: BudgetConfig, where: str, warnings: list[str]
) -> BudgetConfig:
    for prefix in ("repo_map", "history_summary"):
        low, high = f"{prefix}_min_tokens", f"{prefix}_max_tokens"
        if getattr(budget, low) > getattr(budget, high):
            kept = {low: getattr(fallback, low), high: getattr(fallback, high)}
            warnings.append(f"{where} {low} is above {high}; using {kept[low]}..{kept[high]}")
            budget = replace(budget, **kept)
    return budget


def _merge_layer(
    config: TokendConfig,
    layer: Mapping[str, Any],
    source: str,
    warnings: list[str],
    *,
    workspace: bool,
) -> TokendConfig:
    changes: dict[str, Any] = {}
    for key, value in layer.items():
        if key == "budget":
            budget = _merge_table(
                config.budget, value, BUDGET_CHECKS, f"{source}: [budget]", warnings
            )
            changes["budget"] = _check_ranges(
                budget, config.budget, f"{source}: [budget]", warnings
            )
        elif key == "compaction":
            where = f"{source}: [compaction]"
            changes["compaction"] = _merge_table(
                config.compaction, value, COMPACTION_CHECKS, where, warnings
            )
        elif key == "models":
            changes["models"] = _merge_models(config.models, value, source, warnings)
        elif key == "database_url" and workspace:
            warnings.append(
                f"{source}: database_url is read from the user config or TOKEND_DATABASE_URL only "
                "(a repository must not choose where sessions are stored); ignored"
            )
        elif key in TOP_CHECKS:
            check, expected = TOP_CHECKS[key]
            if check(value):
                changes[key] = value.lower() if key == "log_level" else value
            else:
                kept = getattr(config, key)
                warnings.append(
                    f"{source}: {key} = {value!r} is invalid (expected {expected}); using {kept!r}"
                )
        else:
            warnings.append(f"{source}: {key} is not a known setting; ignored")
    return replace(config, **changes)


def _merge_models(
    models: dict[str, dict[str, Any]], value: Any, source: str, warnings: list[str]
) -> dict[str, dict[str, Any]]:
    """Per model, key by key: a later layer's key replaces an earlier one's."""
    if not isinstance(value, Mapping):
        warnings.append(f'{source}: [models] must be a table of [models."NAME"] tables; ignored')
        return models
    merged = {name: dict(table) for name, table in models.items()}
    for name, table in value.items():
        if isinstance(table, Mapping):
            merged[name] = {**merged.get(name, {}), **table}
        else:
            warnings.append(f'{source}: [models."{name}"] must be a table; ignored')
    return merged


def merge_config(
    defaults: TokendConfig,
    user: Mapping[str, Any],
    workspace: Mapping[str, Any],
    *,
    sources: tuple[str, str] = ("user config", "workspace config"),
) -> tuple[TokendConfig, list[str]]:
    """`defaults` < `user` < `workspace` (parsed TOML documents). Returns the merged config and
    one warning per ignored key or invalid value; `sources` name the layers in the warnings."""
    warnings: list[str] = []
    config = _merge_layer(defaults, user, sources[0], warnings, workspace=False)
    config = _merge_layer(config, workspace, sources[1], warnings, workspace=True)
    return config, warnings
