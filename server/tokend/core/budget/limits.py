"""How a model's context window is shared out, and when to compact. All figures are tokens.

Defaults and where they come from (paste into protocol.md):

| Setting (config key)                      | Default                                   | Source |
|-------------------------------------------|-------------------------------------------|--------|
| output reserve (`budget.output_reserve_cap`) | min(model max output, 32,000); 32,000 when the model's max output is unknown | OpenCode (`OUTPUT_TOKEN_MAX`, `maxOutputTokens`) |
| safety margin (`budget.safety_margin_ratio`) | 5% of the window, rounded up              | tokend (room for estimated counts) |
| repo map target (`budget.repo_map_*`)     | input limit / 8, clamped to 1,024..4,096; x2 when no chat files | Aider (`get_repo_map_tokens`, `--map-multiplier-no-files 2`) |
| history summary target (`budget.history_summary_*`) | input limit / 16, clamped to 1,024..8,192 | Aider (`max_chat_history_tokens`) |
| `compaction.auto`                         | true                                      | OpenCode |
| `compaction.reserved`                     | min(20,000, output reserve)               | OpenCode (`COMPACTION_BUFFER`) |
| `compaction.prune`                        | true                                      | OpenCode |
| `compaction.protected_tools`              | ["skill"]                                 | OpenCode (`PRUNE_PROTECTED_TOOLS`) |
| `compaction.prune_protect_tokens`         | 40,000 (newest tool output kept intact)   | OpenCode (`PRUNE_PROTECT`) |
| `compaction.prune_minimum_tokens`         | 20,000 (prune only if it frees more)      | OpenCode (`PRUNE_MINIMUM`) |
| `compaction.prune_policy`                 | "cache" (prune when it pays for the cache rewrite) | tokend (issue 21) |

"Input limit" is the model's `input_limit` when known, else its `context_window`
(litellm's max_input_tokens, which is what Aider divides).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from tokend.core.config_rules import at_least, in_range
from tokend.core.models.catalog import ModelInfo

COMPACTION_BUFFER_TOKENS = 20_000  # OpenCode's COMPACTION_BUFFER


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """How the window is shared out. Token counts, except the ratio (a fraction of the window)."""

    output_reserve_cap: Annotated[int, at_least(1)] = 32_000
    safety_margin_ratio: Annotated[float, in_range(0.0, 0.5)] = 0.05
    repo_map_divisor: Annotated[int, at_least(1)] = 8
    repo_map_min_tokens: Annotated[int, at_least(0)] = 1024
    repo_map_max_tokens: Annotated[int, at_least(0)] = 4096
    repo_map_no_files_multiplier: Annotated[int, at_least(1)] = 2
    history_summary_divisor: Annotated[int, at_least(1)] = 16
    history_summary_min_tokens: Annotated[int, at_least(0)] = 1024
    history_summary_max_tokens: Annotated[int, at_least(0)] = 8192

    # (low, high) pairs a layer may not cross: the pair goes back to the layers below.
    RANGES: ClassVar = (
        ("repo_map_min_tokens", "repo_map_max_tokens"),
        ("history_summary_min_tokens", "history_summary_max_tokens"),
    )


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """OpenCode's `compaction.{auto, reserved, prune}` plus its pruning constants (tokens)."""

    auto: bool = True
    reserved: Annotated[int | None, at_least(0)] = None  # None: min(20,000, output reserve)
    prune: bool = True
    protected_tools: tuple[str, ...] = ("skill",)
    prune_protect_tokens: Annotated[int, at_least(0)] = 40_000
    prune_minimum_tokens: Annotated[int, at_least(0)] = 20_000
    # "cache": prune when it pays for the prompt cache's rewrite (core.compaction.prune_policy);
    # "eager": OpenCode's rule alone, whenever the old tool output passes the minimum
    prune_policy: Literal["cache", "eager"] = "cache"


def _input_limit(info: ModelInfo) -> int:
    return min(info.input_limit or info.context_window, info.context_window)


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


def output_reserve_tokens(info: ModelInfo, cfg: BudgetConfig = BudgetConfig()) -> int:
    """Room kept for the reply: the model's max output capped at `output_reserve_cap` (the cap
    itself when the max output is unknown), never more than the window."""
    reserve = min(info.max_output_tokens, cfg.output_reserve_cap) or cfg.output_reserve_cap
    return min(reserve, info.context_window)


def safety_margin_tokens(info: ModelInfo, cfg: BudgetConfig = BudgetConfig()) -> int:
    """`safety_margin_ratio` of the window, rounded up."""
    return math.ceil(info.context_window * cfg.safety_margin_ratio)


def input_room_tokens(
    info: ModelInfo, cfg: BudgetConfig = BudgetConfig(), *, exact: bool = False
) -> int:
    """Tokens a request may hold: the window less the output reserve, less the safety margin
    unless the counts are `exact` (a local tokenizer for the model). Zero or less: no room for
    input at all (a window the settings fill; create_session and the config checks refuse it)."""
    room = info.context_window - output_reserve_tokens(info, cfg)
    return room if exact else room - safety_margin_tokens(info, cfg)


def repo_map_target_tokens(
    info: ModelInfo, has_chat_files: bool, cfg: BudgetConfig = BudgetConfig()
) -> int:
    """How big a repo map to build: input limit / 8 clamped to 1,024..4,096, doubled when the
    chat has no files (Aider)."""
    target = _clamp(
        _input_limit(info) // cfg.repo_map_divisor, cfg.repo_map_min_tokens, cfg.repo_map_max_tokens
    )
    return target if has_chat_files else target * cfg.repo_map_no_files_multiplier


def history_summary_target_tokens(info: ModelInfo, cfg: BudgetConfig = BudgetConfig()) -> int:
    """How long a history summary may be: input limit / 16 clamped to 1,024..8,192 (Aider)."""
    return _clamp(
        _input_limit(info) // cfg.history_summary_divisor,
        cfg.history_summary_min_tokens,
        cfg.history_summary_max_tokens,
    )


def autocompact_threshold(
    info: ModelInfo,
    compaction: CompactionConfig = CompactionConfig(),
    budget: BudgetConfig = BudgetConfig(),
) -> int:
    """Context tokens (input + cache read + output of the last call) at which to compact.

    OpenCode's rule: with a known input limit, input limit - min(20,000, output reserve); else
    window - output reserve. A configured `compaction.reserved` replaces the subtracted amount in
    both cases (OpenCode applies it to the first only; tokend's catalog rarely knows an input
    limit, so the setting would otherwise do nothing). Clamped to 0..window-1. Callers check
    `compaction.auto` themselves.
    """
    output = output_reserve_tokens(info, budget)
    if compaction.reserved is not None:
        usable = _input_limit(info) - compaction.reserved
    elif info.input_limit:
        usable = _input_limit(info) - min(COMPACTION_BUFFER_TOKENS, output)
    else:
        usable = info.context_window - output
    return _clamp(usable, 0, info.context_window - 1)
