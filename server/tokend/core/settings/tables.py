"""tokend's settings: one field per TOML table, each table's dataclass with its feature. Pure.

How the layers merge and how a value is checked (against the field's type and the rules it
carries) is in tokend.core.settings.config; the adapter reads TOML (adapters.config_files).

Keys (TOML):
    database_url = "sqlite:///path/to/tokend.db"   # user layer only (and TOKEND_DATABASE_URL)
    idle_timeout_s = 60                            # seconds, >= 0; user layer only
    log_level = "info"                             # debug | info | warning | error
    [budget]      # BudgetConfig fields, see tokend.core.budget.limits
    [compaction]  # CompactionConfig fields: auto, reserved, prune, protected_tools, prune_*_tokens, prune_policy
    [context]     # budget_injection, see tokend.core.assembly.budget_injection
    [context_editing]  # Anthropic's context editing edits, see tokend.core.assembly.context_editing
    [spend]       # SpendConfig fields (user_daily_usd, timezone: user only), tokend.core.usage.spend
    [tool_output] # GateConfig fields (characters, tool names), see tokend.core.session.gates
    [checkpoints] # CheckpointConfig fields (days, bytes; user config only), tokend.core.checkpoints.turns
    [rate]        # tpm_limit (user config only), see tokend.core.usage.stats
    [telemetry]   # TelemetryConfig fields (user config only), see tokend.core.telemetry.settings
    [summarizer]  # SummarizerConfig fields (user config only), see tokend.core.compaction.model_summary
    [handoff]     # HandoffConfig fields (max_files, file_tokens), see tokend.core.session.handoff
    [statusline]  # segments = ["model", "context", ...], see tokend.core.statusline.settings
    [status]      # start_daemon = true (user config only), see tokend.core.statusline.settings
    [models."NAME"]  # catalog overrides, see tokend.core.models.catalog.OVERRIDE_KEYS
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from tokend.core.assembly.budget_injection import ContextConfig
from tokend.core.assembly.context_editing import ContextEditingConfig
from tokend.core.budget.limits import (
    BudgetConfig,
    CompactionConfig,
    autocompact_threshold,
    input_room_tokens,
    output_reserve_tokens,
    safety_margin_tokens,
)
from tokend.core.checkpoints.turns import CheckpointConfig
from tokend.core.compaction.model_summary import SummarizerConfig
from tokend.core.config_rules import Check, FoldCase, NamedTables, UserOnly
from tokend.core.models.catalog import ModelInfo
from tokend.core.session.gates import GateConfig
from tokend.core.session.handoff import HandoffConfig
from tokend.core.statusline.settings import StatusConfig, StatuslineConfig
from tokend.core.telemetry.settings import TelemetryConfig
from tokend.core.usage.spend import SpendConfig
from tokend.core.usage.stats import RateConfig

LogLevel = Literal["debug", "info", "warning", "error"]
_NON_EMPTY = Check(lambda v: v != "", "a non-empty string")
# A repository must not choose where sessions are stored, where metrics or the conversation are
# sent, nor which environment variable's key goes with them.
_SESSIONS_STORE = UserOnly(
    "a repository must not choose where sessions are stored",
    "the user config or TOKEND_DATABASE_URL",
)
_DAEMON = UserOnly("the daemon's, one for every workspace")


@dataclass(frozen=True, slots=True)
class TokendConfig:
    """Merged settings. `database_url` None means the store's default SQLite file."""

    database_url: Annotated[str | None, _NON_EMPTY, _SESSIONS_STORE] = None
    budget: BudgetConfig = BudgetConfig()
    compaction: CompactionConfig = CompactionConfig()
    # name -> override table
    models: Annotated[dict[str, dict[str, Any]], NamedTables()] = field(default_factory=dict)
    idle_timeout_s: Annotated[
        float, Check(lambda v: v >= 0, "a number of seconds >= 0"), _DAEMON
    ] = 60
    log_level: Annotated[LogLevel, FoldCase()] = "info"
    context: ContextConfig = ContextConfig()
    context_editing: ContextEditingConfig = ContextEditingConfig()
    spend: SpendConfig = SpendConfig()
    rate: Annotated[RateConfig, UserOnly("the provider's limit, one for every workspace")] = (
        RateConfig()
    )
    telemetry: Annotated[
        TelemetryConfig, UserOnly("a repository must not choose where metrics are sent")
    ] = TelemetryConfig()
    tool_output: GateConfig = GateConfig()
    checkpoints: Annotated[
        CheckpointConfig, UserOnly("one checkpoint store for every workspace")
    ] = CheckpointConfig()
    summarizer: Annotated[
        SummarizerConfig,
        UserOnly(
            "a repository must not choose where the conversation is sent for a summary, "
            "or with which key"
        ),
    ] = SummarizerConfig()
    handoff: HandoffConfig = HandoffConfig()
    statusline: StatuslineConfig = StatuslineConfig()
    status: Annotated[StatusConfig, UserOnly("the daemon's, one for every workspace")] = (
        StatusConfig()
    )


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
