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

"Input limit" is the model's `input_limit` when known, else its `context_window`
(litellm's max_input_tokens, which is what Aider divides).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tokend.core.catalog import ModelInfo
from tokend.core.errors import ContextOverflow

CATEGORIES = (
    "output_reserve", "safety_margin", "system", "tools", "memory",
    "repo_map", "chat_files", "history", "current", "reminder",
)  # fmt: skip
"""Budget lines in display order (the order of the assembled prompt, reserves first)."""

MEASURED_CATEGORIES = CATEGORIES[2:]
"""Categories `partition` takes measured token counts for."""

COMPACTION_BUFFER_TOKENS = 20_000  # OpenCode's COMPACTION_BUFFER


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """How the window is shared out. Token counts, except the ratio (a fraction of the window)."""

    output_reserve_cap: int = 32_000
    safety_margin_ratio: float = 0.05
    repo_map_divisor: int = 8
    repo_map_min_tokens: int = 1024
    repo_map_max_tokens: int = 4096
    repo_map_no_files_multiplier: int = 2
    history_summary_divisor: int = 16
    history_summary_min_tokens: int = 1024
    history_summary_max_tokens: int = 8192


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """OpenCode's `compaction.{auto, reserved, prune}` plus its pruning constants (tokens)."""

    auto: bool = True
    reserved: int | None = None  # None: min(20,000, output reserve)
    prune: bool = True
    protected_tools: tuple[str, ...] = ("skill",)
    prune_protect_tokens: int = 40_000
    prune_minimum_tokens: int = 20_000


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


@dataclass(frozen=True, slots=True)
class BudgetLine:
    """One category: the tokens granted to it and the tokens its content measures."""

    category: str
    allowance_tokens: int
    measured_tokens: int = 0

    @property
    def over_tokens(self) -> int:
        """Measured tokens that did not get room (to trim, drop or compact)."""
        return max(0, self.measured_tokens - self.allowance_tokens)


@dataclass(frozen=True, slots=True)
class BudgetOverflow:
    """The current message and reminder do not fit even with the whole history dropped."""

    total_tokens: int  # reserves + everything that must be sent
    limit_tokens: int  # the window
    missing_tokens: int
    suggestions: tuple[str, ...]

    def to_error(self) -> ContextOverflow:
        message = (
            f"The context needs {self.total_tokens:,} tokens but the window is "
            f"{self.limit_tokens:,}: " + "; or ".join(self.suggestions) + "."
        )
        data = {"total": self.total_tokens, "limit": self.limit_tokens}
        return ContextOverflow(message, {**data, "suggestions": list(self.suggestions)})


@dataclass(frozen=True, slots=True)
class BudgetPartition:
    """The window shared out. `lines` follow CATEGORIES; allowances sum to at most the window.

    Reserves, system, tools, memory, repo map (up to its target) and chat files are granted
    their measured size in that priority; the current message and reminder come next; history
    gets all the room left, so `history.over_tokens > 0` means the history must be compacted.
    """

    context_window: int
    lines: tuple[BudgetLine, ...]
    current_room_tokens: int  # room for current + reminder + history after everything else
    repo_map_target_tokens: int
    history_summary_target_tokens: int
    overflow: BudgetOverflow | None

    def line(self, category: str) -> BudgetLine:
        return self.lines[CATEGORIES.index(category)]

    def allowance(self, category: str) -> int:
        return self.line(category).allowance_tokens

    @property
    def allotted_tokens(self) -> int:
        return sum(line.allowance_tokens for line in self.lines)

    def fits(self, current_tokens: int) -> bool:
        """Whether a current message of `current_tokens` (plus the measured reminder) can be
        sent, dropping or compacting history as needed."""
        return current_tokens + self.line("reminder").measured_tokens <= self.current_room_tokens


def partition(
    info: ModelInfo,
    cfg: BudgetConfig,
    measured: Mapping[str, int],
    has_chat_files: bool,
) -> BudgetPartition:
    """Share `info.context_window` out among CATEGORIES given measured sizes (tokens; missing
    categories count 0). Raises ValueError on an unknown category or a negative count."""
    for category, tokens in measured.items():
        if category not in MEASURED_CATEGORIES or tokens < 0:
            raise ValueError(f"bad measured category {category!r}={tokens!r}")
    size = {c: measured.get(c, 0) for c in MEASURED_CATEGORIES}
    window = info.context_window
    repo_target = repo_map_target_tokens(info, has_chat_files, cfg)
    left = window
    granted: dict[str, int] = {}

    def grant(category: str, wanted: int) -> None:
        nonlocal left
        granted[category] = min(wanted, left)
        left -= granted[category]

    grant("output_reserve", output_reserve_tokens(info, cfg))
    grant("safety_margin", safety_margin_tokens(info, cfg))
    grant("system", size["system"])
    grant("tools", size["tools"])
    grant("memory", size["memory"])
    grant("repo_map", min(size["repo_map"], repo_target))
    grant("chat_files", size["chat_files"])
    current_room = left
    grant("current", size["current"])
    grant("reminder", size["reminder"])
    grant("history", left)
    lines = tuple(BudgetLine(c, granted[c], size.get(c, 0)) for c in CATEGORIES)
    needed = size["current"] + size["reminder"]
    overflow = None
    if needed > current_room:
        overflow = _overflow(window, current_room, needed, granted)
    return BudgetPartition(
        context_window=window,
        lines=lines,
        current_room_tokens=current_room,
        repo_map_target_tokens=repo_target,
        history_summary_target_tokens=history_summary_target_tokens(info, cfg),
        overflow=overflow,
    )


def _overflow(window: int, room: int, needed: int, granted: Mapping[str, int]) -> BudgetOverflow:
    missing = needed - room
    suggestions: list[str] = []
    droppable = 0
    for category, label in (
        ("chat_files", "drop chat files"),
        ("repo_map", "drop the repo map"),
        ("memory", "drop memory files"),
    ):
        if granted[category] > 0:
            suggestions.append(f"{label} ({granted[category]:,} tokens)")
            droppable += granted[category]
    suggestions.append(f"shorten the current message by at least {missing:,} tokens")
    if droppable < missing and granted["system"] + granted["tools"] > 0:
        suggestions.append("use a model with a larger context window")
    return BudgetOverflow(
        total_tokens=window - room + needed,
        limit_tokens=window,
        missing_tokens=missing,
        suggestions=tuple(suggestions),
    )
