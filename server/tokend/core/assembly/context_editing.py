"""Anthropic's context editing, sent by tokend instead of pruning client-side. Pure.

With `[context_editing] enabled` (or `contextEditing: true` on the request), `context/assemble`
in the Anthropic format returns the `context_management` object the request should carry; the
API then clears old tool results (and, when asked, old thinking) itself, server-side, before the
prompt reaches the model, while the client keeps sending the whole history. The values are the
session's settings; their defaults are Anthropic's own (the context editing page: `trigger`
100,000 input tokens, `keep` 3 tool uses, no `clear_at_least`, no excluded tools, tool inputs
kept; `clear_thinking_20251015` is not sent unless asked, so the API's default for thinking
blocks applies). A model Anthropic does not list (core.models.provider_features) gets no edit, and a
warning says why. Tokens throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any

from tokend.core.assembly.assemble import Assembly
from tokend.core.config_rules import at_least
from tokend.core.models.provider_features import CONTEXT_EDITING

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"


@dataclass(frozen=True, slots=True)
class ContextEditingConfig:
    """`[context_editing]`: whether tokend sends Anthropic's edits, and their values."""

    enabled: bool = False
    trigger_tokens: Annotated[int, at_least(1)] = 100_000  # clear once the input passes this
    keep_tool_uses: Annotated[int, at_least(0)] = 3  # the newest tool uses kept whole
    clear_at_least_tokens: Annotated[int, at_least(0)] = 0  # 0: not sent (no minimum)
    exclude_tools: tuple[str, ...] = ()  # tools whose results are never cleared
    clear_tool_inputs: bool = False  # also clear the tool calls' inputs
    # clear_thinking_20251015: None sends no thinking edit; N keeps the newest N turns' thinking
    keep_thinking_turns: Annotated[int | None, at_least(1)] = None
    keep_all_thinking: bool = False  # send the thinking edit with keep "all" (cache-friendly)


def context_management(cfg: ContextEditingConfig) -> dict[str, Any]:
    """The request's `context_management` object, as Anthropic documents it. The thinking edit,
    when sent, comes first."""
    edits: list[dict[str, Any]] = []
    if cfg.keep_all_thinking:
        edits.append({"type": CLEAR_THINKING, "keep": "all"})
    elif cfg.keep_thinking_turns is not None:
        keep = {"type": "thinking_turns", "value": cfg.keep_thinking_turns}
        edits.append({"type": CLEAR_THINKING, "keep": keep})
    tool_uses: dict[str, Any] = {
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "input_tokens", "value": cfg.trigger_tokens},
        "keep": {"type": "tool_uses", "value": cfg.keep_tool_uses},
    }
    if cfg.clear_at_least_tokens:
        tool_uses["clear_at_least"] = {"type": "input_tokens", "value": cfg.clear_at_least_tokens}
    if cfg.exclude_tools:
        tool_uses["exclude_tools"] = list(cfg.exclude_tools)
    if cfg.clear_tool_inputs:
        tool_uses["clear_tool_inputs"] = True
    edits.append(tool_uses)
    return {"edits": edits}


@dataclass(frozen=True, slots=True)
class ProviderEdits:
    """What one assembly sends: the `context_management` object (None: nothing), the beta
    header it needs, and a warning when it was asked for and not sent."""

    context_management: dict[str, Any] | None = None
    beta: str | None = None
    warning: str | None = None


def provider_edits(
    cfg: ContextEditingConfig, requested: bool | None, model: str, wire_format: str
) -> ProviderEdits:
    """The edits of one assembly: asked for by the request (`requested`), else the setting."""
    if not (cfg.enabled if requested is None else requested):
        return ProviderEdits()
    if wire_format != "anthropic":
        return ProviderEdits(
            warning='context editing not sent: it is Anthropic\'s (format "anthropic"), not '
            f"part of the {wire_format} format"
        )
    if not CONTEXT_EDITING.supports(model):
        return ProviderEdits(
            warning=f"context editing not sent: {model} is not among the models Anthropic "
            f"lists for {CONTEXT_EDITING.request_field} ({CONTEXT_EDITING.source}); "
            "old tool results are pruned by tokend instead"
        )
    return ProviderEdits(context_management(cfg), CONTEXT_EDITING.beta)


def provider_clears(cfg: ContextEditingConfig, model: str) -> bool:
    """Does the provider clear this session's old tool results (the setting on, the model
    listed)? Then tokend's own prune stands aside."""
    return cfg.enabled and CONTEXT_EDITING.supports(model)


def with_request_field(assembly: Assembly, key: str, value: Any, beta: str) -> Assembly:
    """`assembly` with one more provider request field for the reply (`key`, as the reply names
    it) and the beta header value it needs."""
    betas = assembly.betas if beta in assembly.betas else (*assembly.betas, beta)
    return replace(assembly, extras=(*assembly.extras, (key, value)), betas=betas)
