"""Context awareness: telling the model its own budget, inside the request tokend assembles.

Modes (`budgetInjection`):
- "native": the tags Claude Sonnet 4.5/4.6 and Haiku 4.5 were trained on, in Anthropic's wording:
  `<budget:token_budget>N</budget:token_budget>` (N = the context window) and, after tool
  results, `<system_warning>Token usage: U/N; R remaining</system_warning>`; for a model with
  Anthropic's task budgets (core.models.provider_features), in its format, the request's
  `output_config.task_budget` with N and R instead of text.
- "synthetic": one short note for other models: the same figures and where compaction fires.
- "off": nothing.

The figures are the gauge's: U is `used_tokens` (the number compaction acts on), N the window,
R `max(0, N - U)`. The text goes at the END of the request, after the last cache breakpoint, so
every cached prefix stays byte-identical with and without it: appended as a text block to the
last user message (Anthropic, where the turn's tool results are), or as one message of its own
(OpenAI; and Anthropic when the request ends with an assistant message). It is a chunk of its
own, "budget", counted with the caller's `count` plus the framing of a new message.
Anthropic's first-party API already injects these tags for the models trained on them; "native"
is for requests that reach such a model another way, or for an explicit choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from tokend.core.assembly.assemble import Assembly
from tokend.core.assembly.context_editing import with_request_field
from tokend.core.models.provider_features import TASK_BUDGETS

BudgetInjection = Literal["native", "synthetic", "off"]
BudgetInjectionSetting = Literal["auto", "native", "synthetic", "off"]  # auto: the model's default
INJECTION_MODES: tuple[str, ...] = get_args(BudgetInjection)
CHUNK = "budget"
DEFAULT_SETTING: BudgetInjectionSetting = "off"  # "auto" turns it on with each model's default


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """`[context]`: `budget_injection` when a request does not say (auto|native|synthetic|off)."""

    budget_injection: BudgetInjectionSetting = DEFAULT_SETTING


@dataclass(frozen=True, slots=True)
class BudgetFigures:
    """The gauge's figures, tokens: used (U), the window (N), the autocompact threshold."""

    used_tokens: int
    context_window: int
    autocompact_threshold: int
    auto_compaction: bool = True

    @property
    def remaining_tokens(self) -> int:
        return max(0, self.context_window - self.used_tokens)


def resolve_mode(requested: str | None, setting: str, native_model: bool) -> BudgetInjection:
    """The mode of one assembly: the request's, else the setting's; "auto" is the model's
    default (native where it was trained on the tags, synthetic elsewhere). Values are checked
    by the caller (the request) and by the config (the setting)."""
    chosen = requested or setting
    if chosen == "auto":
        return "native" if native_model else "synthetic"
    if chosen not in INJECTION_MODES:
        raise ValueError(f"unknown budget injection {chosen!r}")
    return chosen  # type: ignore[return-value]  # checked just above


def native_text(figures: BudgetFigures, after_tool_results: bool) -> str:
    """The budget tag, and the usage warning when the request ends with tool results."""
    n = figures.context_window
    text = f"<budget:token_budget>{n}</budget:token_budget>"
    if after_tool_results:
        used, left = figures.used_tokens, figures.remaining_tokens
        text += f"\n<system_warning>Token usage: {used}/{n}; {left} remaining</system_warning>"
    return text


def synthetic_text(figures: BudgetFigures) -> str:
    """One short note: usage, what is left, and where automatic compaction fires."""
    used, n = figures.used_tokens, figures.context_window
    pct = round(100 * used / n, 1) if n else 100.0
    note = (
        f"[Context budget] {used:,} of {n:,} tokens used ({pct}%); "
        f"{figures.remaining_tokens:,} remaining."
    )
    if not figures.auto_compaction:
        return note + " Automatic compaction is off."
    to_go = max(0, figures.autocompact_threshold - used)
    return note + (
        f" The conversation is compacted automatically at {figures.autocompact_threshold:,} "
        f"tokens ({to_go:,} from now)."
    )


def task_budget_model(model: str, wire_format: str) -> bool:
    """Does "native" mean Anthropic's task budget for this model in this format?"""
    return wire_format == "anthropic" and TASK_BUDGETS.supports(model)


def with_task_budget(assembly: Assembly, figures: BudgetFigures) -> Assembly:
    """ "native" for a model Anthropic lists for task budgets: the request's `output_config`
    with `task_budget` {type "tokens", total: the window, remaining: what the gauge leaves of
    it}, and no text (the "budget" chunk is 0). Every request carries the remainder as it is
    then, so the first one after a compaction carries the compacted session's."""
    budget = {"type": "tokens", "total": figures.context_window}
    budget["remaining"] = figures.remaining_tokens
    config = {"task_budget": budget}
    return _with_chunk(with_request_field(assembly, "outputConfig", config, TASK_BUDGETS.beta), 0)


def ends_with_tool_results(assembly: Assembly) -> bool:
    """Does the request end with the results of tool calls (the turn in progress)?"""
    if not assembly.messages:
        return False
    last = assembly.messages[-1]
    if assembly.format == "openai":
        return bool(last.get("role") == "tool")
    content = last.get("content")
    return (
        last.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def inject(
    assembly: Assembly,
    text: str,
    count: Callable[[str], int],
    new_message_overhead: int,
    limit_tokens: int,
) -> Assembly:
    """`assembly` with `text` after its last cache breakpoint and the "budget" chunk added
    (tokens: `count(text)`, plus `new_message_overhead` when it needs a message of its own).
    When it does not fit under `limit_tokens` it is left out with a warning (the chunk is 0)."""
    messages = list(assembly.messages)
    own_message = not _appendable(assembly)
    tokens = count(text) + (new_message_overhead if own_message else 0)
    if assembly.total_tokens + tokens > limit_tokens:
        warning = f"budget injection dropped: its {tokens:,} tokens do not fit"
        return _with_chunk(assembly, 0, warnings=(*assembly.warnings, warning))
    if own_message:
        role = "system" if assembly.format == "openai" else "user"
        content: Any = text if assembly.format == "openai" else [{"type": "text", "text": text}]
        messages.append({"role": role, "content": content})
    else:
        last = messages[-1]
        blocks = last["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        messages[-1] = {**last, "content": [*blocks, {"type": "text", "text": text}]}
    return _with_chunk(
        assembly, tokens, messages=tuple(messages), total=assembly.total_tokens + tokens
    )


def _appendable(assembly: Assembly) -> bool:
    """Anthropic: the last message is the user's (tool results, the prompt): a block is added
    to it. Blocks after a cache_control block leave the cached prefix as it was."""
    if assembly.format != "anthropic" or not assembly.messages:
        return False
    return bool(assembly.messages[-1].get("role") == "user")


def _with_chunk(
    assembly: Assembly,
    tokens: int,
    *,
    messages: Sequence[Any] | None = None,
    total: int | None = None,
    warnings: tuple[str, ...] | None = None,
) -> Assembly:
    return replace(
        assembly,
        messages=tuple(messages) if messages is not None else assembly.messages,
        total_tokens=total if total is not None else assembly.total_tokens,
        chunks=(*assembly.chunks, (CHUNK, tokens)),
        warnings=warnings if warnings is not None else assembly.warnings,
    )
