"""tokend's settings and how the user and workspace layers merge. Pure: the adapter reads TOML.

Layers, later wins: documented defaults < user config.toml < workspace .tokend.toml. An invalid
value is reported as a warning and the value of the layers below it (the default, when no layer
set it) is kept, so a typo never stops the daemon (jedi-language-server's habit). Which layer
set each value is kept too (`merge_layers`), for `tokend config`.

Keys (TOML):
    database_url = "sqlite:///path/to/tokend.db"   # user layer only (and TOKEND_DATABASE_URL)
    idle_timeout_s = 60                            # seconds, >= 0
    log_level = "info"                             # debug | info | warning | error
    [budget]      # BudgetConfig fields, see tokend.core.budget
    [compaction]  # CompactionConfig fields: auto, reserved, prune, protected_tools, prune_*_tokens
    [context]     # budget_injection, see tokend.core.budget_injection
    [spend]       # SpendConfig fields, see tokend.core.spend
    [tool_output] # GateConfig fields (characters, tool names), see tokend.core.gates
    [checkpoints] # CheckpointConfig fields (days, bytes), see tokend.core.checkpoints
    [rate]        # tpm_limit, see tokend.core.usage_stats
    [telemetry]   # TelemetryConfig fields, see tokend.core.telemetry_settings
    [summarizer]  # SummarizerConfig fields (user config only), see tokend.core.model_summary
    [handoff]     # HandoffConfig fields (max_files, file_tokens), see tokend.core.handoff
    [models."NAME"]  # catalog overrides, see tokend.core.catalog.OVERRIDE_KEYS
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tokend.core.budget import (
    BudgetConfig,
    CompactionConfig,
    autocompact_threshold,
    input_room_tokens,
    output_reserve_tokens,
    safety_margin_tokens,
)
from tokend.core.budget_injection import CONTEXT_CHECKS, ContextConfig
from tokend.core.catalog import ModelInfo
from tokend.core.checkpoints import CheckpointConfig
from tokend.core.gates import GateConfig
from tokend.core.handoff import HANDOFF_CHECKS, HandoffConfig
from tokend.core.model_summary import SUMMARIZER_CHECKS, SummarizerConfig
from tokend.core.spend import SPEND_CHECKS, SpendConfig
from tokend.core.telemetry_settings import TELEMETRY_CHECKS, TelemetryConfig
from tokend.core.usage_stats import RATE_CHECKS, RateConfig

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
    context: ContextConfig = ContextConfig()
    spend: SpendConfig = SpendConfig()
    rate: RateConfig = RateConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    tool_output: GateConfig = GateConfig()
    checkpoints: CheckpointConfig = CheckpointConfig()
    summarizer: SummarizerConfig = SummarizerConfig()
    handoff: HandoffConfig = HandoffConfig()


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
GATE_CHECKS: dict[str, Check] = {
    "single_result_chars": _int(1),
    "message_results_chars": _int(1),
    "preview_chars": _int(0),
    "middle_out_chars": _int(0),
    "middle_out_tools": _STRINGS,
    "exempt_tools": _STRINGS,
}
CHECKPOINT_CHECKS: dict[str, Check] = {
    "retention_days": _number(0.0, float("inf")),
    "max_file_bytes": _int(0),
    "max_turn_bytes": _int(0),
}
TABLE_CHECKS: dict[str, Mapping[str, Check]] = {
    "budget": BUDGET_CHECKS,
    "compaction": COMPACTION_CHECKS,
    "context": CONTEXT_CHECKS,
    "spend": SPEND_CHECKS,
    "rate": RATE_CHECKS,
    "telemetry": TELEMETRY_CHECKS,
    "tool_output": GATE_CHECKS,
    "summarizer": SUMMARIZER_CHECKS,
    "handoff": HANDOFF_CHECKS,
}
# Tables a workspace's .tokend.toml may not set: a repository must not choose where metrics or
# the conversation are sent, nor which environment variable's key goes with them.
USER_ONLY_TABLES: dict[str, str] = {
    "telemetry": "where metrics are sent",
    "summarizer": "where the conversation is sent for a summary, or with which key",
}
TOP_CHECKS: dict[str, Check] = {
    "database_url": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "idle_timeout_s": _number(0, float("inf")),
    "log_level": (lambda v: isinstance(v, str) and v.lower() in LOG_LEVELS, " | ".join(LOG_LEVELS)),
}


def _merge_table(
    current: Any,
    table: Any,
    checks: Mapping[str, Check],
    where: str,
    warnings: list[str],
    accepted: list[str],
) -> Any:
    """`current` (a config dataclass) with the valid keys of `table` applied; their names are
    appended to `accepted`."""
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
            accepted.append(key)
    return replace(current, **changes)


def _check_ranges(
    budget: BudgetConfig,
    fallback: BudgetConfig,
    where: str,
    warnings: list[str],
    accepted: list[str],
) -> BudgetConfig:
    for prefix in ("repo_map", "history_summary"):
        low, high = f"{prefix}_min_tokens", f"{prefix}_max_tokens"
        if getattr(budget, low) > getattr(budget, high):
            kept = {low: getattr(fallback, low), high: getattr(fallback, high)}
            warnings.append(f"{where} {low} is above {high}; using {kept[low]}..{kept[high]}")
            budget = replace(budget, **kept)
            accepted[:] = [key for key in accepted if key not in kept]
    return budget


def _merge_layer(
    config: TokendConfig,
    layer: Mapping[str, Any],
    source: str,
    warnings: list[str],
    *,
    workspace: bool,
) -> tuple[TokendConfig, list[str]]:
    """`config` with `layer` applied, and the dotted keys the layer set (see `merge_layers`)."""
    changes: dict[str, Any] = {}
    accepted: list[str] = []
    for key, value in layer.items():
        if key in USER_ONLY_TABLES and workspace:
            warnings.append(
                f"{source}: [{key}] is read from the user config only (a repository must "
                f"not choose {USER_ONLY_TABLES[key]}); ignored"
            )
        elif key in TABLE_CHECKS:
            where = f"{source}: [{key}]"
            checks = TABLE_CHECKS[key]
            keys: list[str] = []
            merged = _merge_table(getattr(config, key), value, checks, where, warnings, keys)
            if key == "budget":
                merged = _check_ranges(merged, config.budget, where, warnings, keys)
            changes[key] = merged
            accepted += [f"{key}.{name}" for name in keys]
        elif key == "models":
            changes["models"] = _merge_models(config.models, value, source, warnings, accepted)
        elif key == "database_url" and workspace:
            warnings.append(
                f"{source}: database_url is read from the user config or TOKEND_DATABASE_URL only "
                "(a repository must not choose where sessions are stored); ignored"
            )
        elif key in TOP_CHECKS:
            check, expected = TOP_CHECKS[key]
            if check(value):
                changes[key] = value.lower() if key == "log_level" else value
                accepted.append(key)
            else:
                kept = getattr(config, key)
                warnings.append(
                    f"{source}: {key} = {value!r} is invalid (expected {expected}); using {kept!r}"
                )
        else:
            warnings.append(f"{source}: {key} is not a known setting; ignored")
    return replace(config, **changes), accepted


def _merge_models(
    models: dict[str, dict[str, Any]],
    value: Any,
    source: str,
    warnings: list[str],
    accepted: list[str],
) -> dict[str, dict[str, Any]]:
    """Per model, key by key: a later layer's key replaces an earlier one's. The keys' values
    are checked by the catalog, which reads these tables (core.catalog.apply_override)."""
    if not isinstance(value, Mapping):
        warnings.append(f'{source}: [models] must be a table of [models."NAME"] tables; ignored')
        return models
    merged = {name: dict(table) for name, table in models.items()}
    for name, table in value.items():
        if isinstance(table, Mapping):
            merged[name] = {**merged.get(name, {}), **table}
            accepted += [model_key(name, key) for key in table]
        else:
            warnings.append(f'{source}: [models."{name}"] must be a table; ignored')
    return merged


def model_key(name: str, key: str) -> str:
    """The dotted name of one key of a `[models."NAME"]` table, as TOML spells it."""
    return f'models."{name}".{key}'


@dataclass(frozen=True, slots=True)
class ConfigLayer:
    """One parsed TOML document. `name` is what `MergedConfig.origins` records ("user",
    "workspace"); `source` is how warnings name it (the file's path)."""

    name: str
    source: str
    document: Mapping[str, Any]
    workspace: bool = False  # a workspace layer may not set database_url


@dataclass(frozen=True, slots=True)
class MergedConfig:
    """The merged settings, one warning per ignored key or invalid value, and which layer set
    each value: dotted key ("budget.output_reserve_cap", 'models."NAME".context_window') ->
    layer name. A key that is absent kept its default."""

    config: TokendConfig
    warnings: tuple[str, ...]
    origins: Mapping[str, str]


def merge_layers(defaults: TokendConfig, layers: Sequence[ConfigLayer]) -> MergedConfig:
    """`defaults`, then each layer in order (a later layer wins)."""
    warnings: list[str] = []
    origins: dict[str, str] = {}
    config = defaults
    for layer in layers:
        config, accepted = _merge_layer(
            config, layer.document, layer.source, warnings, workspace=layer.workspace
        )
        origins.update(dict.fromkeys(accepted, layer.name))
    return MergedConfig(config, tuple(warnings), origins)


def merge_config(
    defaults: TokendConfig,
    user: Mapping[str, Any],
    workspace: Mapping[str, Any],
    *,
    sources: tuple[str, str] = ("user config", "workspace config"),
) -> tuple[TokendConfig, list[str]]:
    """`defaults` < `user` < `workspace` (parsed TOML documents). Returns the merged config and
    one warning per ignored key or invalid value; `sources` name the layers in the warnings."""
    merged = merge_layers(
        defaults,
        [
            ConfigLayer("user", sources[0], user),
            ConfigLayer("workspace", sources[1], workspace, workspace=True),
        ],
    )
    return merged.config, list(merged.warnings)


def room_problems(info: ModelInfo, config: TokendConfig) -> list[str]:
    """What leaves a model no room under these settings, in words naming the keys to change.

    Checked for the models a config declares or overrides: a window the output reserve and the
    safety margin fill entirely, an input_limit beyond the window, and a compaction.reserved so
    large that every request would compact. Tokens throughout."""
    problems: list[str] = []
    window = info.context_window
    reserve = output_reserve_tokens(info, config.budget)
    margin = safety_margin_tokens(info, config.budget)
    if input_room_tokens(info, config.budget) <= 0:
        problems.append(
            f"context_window {window:,} leaves no room for input: the output reserve "
            f"({reserve:,}: max_output_tokens capped by [budget] output_reserve_cap) and the "
            f"safety margin ({margin:,}: [budget] safety_margin_ratio) fill it"
        )
    if info.input_limit is not None and info.input_limit > window:
        problems.append(f"input_limit {info.input_limit:,} is above context_window {window:,}")
    reserved = config.compaction.reserved
    if config.compaction.auto and reserved is not None:
        if autocompact_threshold(info, config.compaction, config.budget) == 0:
            problems.append(
                f"[compaction] reserved = {reserved:,} is not below the input limit of "
                f"{info.input_limit or window:,} tokens: every request would compact"
            )
    return problems
