"""Pure converters between wire values and domain types (`from_wire_*` / `to_wire_*`)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import InvalidParams
from tokend.core.excerpt import excerpt
from tokend.core.session.gates import GatedOutput
from tokend.core.types import (
    ROLES,
    CompactionPart,
    FilePart,
    ImagePart,
    Iteration,
    ListedSession,
    Part,
    ReasoningPart,
    Role,
    SessionGauge,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from tokend.lsp.wire import budget, session
from tokend.lsp.wire.budget import to_wire_prompt_cache
from tokend.lsp.wire.message import UsageParams, cleared_figures

PART_TYPES = ("text", "reasoning", "toolCall", "toolResult", "image", "file", "compaction")
COMPACTION_PROVIDERS = ("anthropic", "openai")


def _field(raw: dict[str, Any], index: int, name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in raw:
        raise InvalidParams(f"message.parts[{index}] ({raw.get('type')}) needs the field {name!r}")
    value = raw[name]
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InvalidParams(f"message.parts[{index}].{name} must be {expected}")
    return value


def from_wire_part(raw: Any, index: int) -> Part:
    """One part of `session/append`; raises InvalidParams naming the part and field."""
    if not isinstance(raw, dict):
        raise InvalidParams(f"message.parts[{index}] must be an object with a 'type'")
    kind = raw.get("type")
    if kind == "text":
        return TextPart(_field(raw, index, "text", str))
    if kind == "reasoning":
        meta = raw.get("providerMetadata")
        if meta is not None and not isinstance(meta, dict):
            raise InvalidParams(f"message.parts[{index}].providerMetadata must be an object")
        return ReasoningPart(_field(raw, index, "text", str), meta)
    if kind == "toolCall":
        call_id, name = _field(raw, index, "callId", str), _field(raw, index, "name", str)
        if "input" not in raw:
            raise InvalidParams(f"message.parts[{index}] (toolCall) needs the field 'input'")
        return ToolCallPart(call_id, name, raw["input"])
    if kind == "toolResult":
        is_error = raw.get("isError", False)
        if not isinstance(is_error, bool):
            raise InvalidParams(f"message.parts[{index}].isError must be a boolean")
        return ToolResultPart(
            _field(raw, index, "callId", str),
            _field(raw, index, "name", str),
            _field(raw, index, "output", str),
            is_error,
        )
    if kind == "image":
        data = raw.get("dataBase64")
        if data is not None:
            if not isinstance(data, str):
                raise InvalidParams(f"message.parts[{index}].dataBase64 must be a string")
            try:
                base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidParams(
                    f"message.parts[{index}].dataBase64 is not valid base64"
                ) from None
        return ImagePart(_field(raw, index, "mediaType", str), data)
    if kind == "file":
        return FilePart(_field(raw, index, "path", str))
    if kind == "compaction":
        return _from_wire_compaction(raw, index)
    raise InvalidParams(
        f"message.parts[{index}].type is {excerpt(kind)}; expected one of {', '.join(PART_TYPES)}"
    )


def _from_wire_compaction(raw: dict[str, Any], index: int) -> CompactionPart:
    """A provider's own compaction: Anthropic's compaction block (its content as `summary`),
    or OpenAI's compaction item (its encrypted_content as `opaque`, its id as `id`)."""
    provider = _field(raw, index, "provider", str)
    if provider not in COMPACTION_PROVIDERS:
        raise InvalidParams(
            f"message.parts[{index}].provider is {excerpt(provider)}; expected one of "
            f"{', '.join(COMPACTION_PROVIDERS)}"
        )
    found = {}
    for name in ("summary", "opaque", "id"):
        value = raw.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidParams(f"message.parts[{index}].{name} must be a string")
        found[name] = value
    if not found["summary"] and not found["opaque"]:
        raise InvalidParams(
            f"message.parts[{index}] (compaction) needs a 'summary' (the provider's summary "
            "text) or an 'opaque' (its encrypted content)"
        )
    return CompactionPart(
        found["summary"] or "", provider=provider, opaque=found["opaque"], item_id=found["id"]
    )


def with_iterations(role: str, parts: list[Part], usage: UsageParams | None) -> list[Part]:
    """The parts of one appended message, its provider compaction (at most one, on an assistant
    message) carrying `usage.iterations`. Iterations without a compaction iteration describe
    the call the top-level figures already give; one with a compaction needs the part."""
    where = [i for i, p in enumerate(parts) if isinstance(p, CompactionPart)]
    if where and role != "assistant":
        raise InvalidParams(
            f"message.parts[{where[0]}] (compaction) on a {role} message: a provider's "
            "compaction comes back in the assistant message of the call that compacted"
        )
    if len(where) > 1:
        raise InvalidParams(f"message.parts[{where[1]}]: one compaction per message")
    iterations = usage.iterations if usage is not None else None
    if not iterations:
        return parts
    for n, it in enumerate(iterations):
        figures = (it.input_tokens, it.output_tokens, it.cache_read_tokens, it.cache_write_tokens)
        if it.type not in ("compaction", "message") or min(figures) < 0:
            raise InvalidParams(
                f"message.usage.iterations[{n}] needs type 'compaction' or 'message' and "
                "token counts of 0 or more"
            )
    if not where:
        if any(it.type == "compaction" for it in iterations):
            raise InvalidParams(
                "message.usage.iterations has a compaction iteration but message.parts no "
                "compaction part: send the provider's compaction block with it"
            )
        return parts
    out = list(parts)
    part = out[where[0]]
    assert isinstance(part, CompactionPart)
    out[where[0]] = replace(
        part,
        iterations=tuple(
            Iteration(
                it.type,
                it.input_tokens,
                it.output_tokens,
                it.cache_read_tokens,
                it.cache_write_tokens,
            )
            for it in iterations
        ),
    )
    return out


def from_wire_role(role: str) -> Role:
    if role not in ROLES:
        raise InvalidParams(f"message.role is {excerpt(role)}; expected one of {', '.join(ROLES)}")
    return role


def from_wire_usage(usage: UsageParams | None) -> Usage | None:
    if usage is None:
        return None
    values = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "reasoningTokens": usage.reasoning_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
    }
    for name, value in values.items():
        if value < 0:
            raise InvalidParams(f"message.usage.{name} is {value}; token counts cannot be negative")
    if usage.reasoning_tokens > usage.output_tokens:
        raise InvalidParams("message.usage.reasoningTokens cannot exceed outputTokens")
    if usage.cache_write_1h_tokens > usage.cache_write_tokens:
        raise InvalidParams(
            "message.usage.cacheWrite1hTokens is the part of cacheWriteTokens written with a "
            "1-hour lifetime: it cannot exceed cacheWriteTokens"
        )
    return Usage(
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
        **cleared_figures(usage),  # the provider's context editing (usage.appliedEdits)
    )


def to_wire_snapshot(s: BudgetSnapshot) -> budget.SnapshotWire:
    """All figures in tokens except usedPercentage (0-100, of contextWindow), cost (USD) and
    time (milliseconds, lines)."""
    call = s.last_call
    return budget.SnapshotWire(
        session_id=s.session_id,
        model=s.model,
        context_window=s.context_window,
        max_output_tokens=s.max_output_tokens,
        used_tokens=s.used_tokens,
        used_percentage=s.used_percentage,
        remaining_tokens=s.remaining_tokens,
        estimated=s.estimated,
        breakdown=[budget.BreakdownWire(b.category, b.tokens, b.basis) for b in s.breakdown],
        autocompact_threshold=s.autocompact_threshold,
        compactions=s.compactions,
        compact_with=s.compact_with,
        cost=budget.CostWire(s.cost_total_usd, dict(s.cost_by_model)),
        totals=budget.to_wire_totals(s.totals),
        time=budget.TimeWire(
            s.times.wall_duration_ms,
            s.times.api_duration_ms,
            s.times.lines_added,
            s.times.lines_removed,
        ),
        last_call=None
        if call is None
        else budget.LastCallWire(
            call.message_id,
            call.input_tokens,
            call.output_tokens,
            call.reasoning_tokens,
            call.cache_read_tokens,
            call.cache_write_tokens,
            call.context_tokens,
            call.cleared_input_tokens,
            call.predicted_tokens,
            call.error_pct,
        ),
        last_estimate_error_pct=s.last_estimate_error_pct,
        version=s.version,
        warnings=list(s.warnings),
        rate=_to_wire_rate(s),
        prompt_cache=to_wire_prompt_cache(s, datetime.now(UTC)),  # as of the moment it is sent
    )


def _to_wire_rate(s: BudgetSnapshot) -> budget.RateWire | None:
    rate = s.rate
    if rate is None or rate.tpm_limit is None:
        return None
    return budget.RateWire(
        rate.tokens_per_minute,
        rate.tpm_limit,
        rate.headroom_tokens or 0,
        rate.used_percentage or 0.0,
    )


def to_wire_session_summary(info: ListedSession, gauge: SessionGauge) -> session.SessionSummaryWire:
    return session.SessionSummaryWire(
        session_id=info.id,
        model=info.model,
        title=info.title,
        workspace_uri=info.workspace_uri,
        created_at=info.created_at.isoformat(),
        updated_at=info.updated_at.isoformat(),
        used_tokens=gauge.used_tokens,
        used_percentage=gauge.used_percentage,
        context_window=gauge.context_window,
        estimated=gauge.estimated,
    )


def to_wire_gated(gated: GatedOutput) -> session.GatedOutputWire:
    return session.GatedOutputWire(
        gated.part_index,
        gated.call_id,
        gated.name,
        gated.gate,
        gated.ref,
        gated.original_chars,
        gated.shown_chars,
    )
