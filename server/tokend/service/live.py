"""A loaded session: the mutable state behind one gauge, and the frozen snapshot it publishes.

Readers only ever see `LiveSession.snapshot`, rebuilt after each change (gopls's
Session/Snapshot habit): a request never observes half an update.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from tokend.core.accounting import ErrorLog, predict_next_input
from tokend.core.budget import autocompact_threshold
from tokend.core.catalog import ModelInfo
from tokend.core.config import TokendConfig
from tokend.core.render_cache import RenderCache
from tokend.core.replay import MEASURED_RULES
from tokend.core.snapshot import (
    BudgetSnapshot,
    CallFigures,
    Totals,
    breakdown,
    used_percentage,
)
from tokend.core.types import ContentClass, Message, SessionInfo, Usage


@dataclass
class LiveSession:
    info: SessionInfo
    model: ModelInfo
    config: TokendConfig
    messages: list[Message]  # from the last compaction boundary, oldest first
    message_tokens: dict[str, int]  # message id -> tokens incl. framing overhead
    version: int
    measured: dict[str, int] = field(default_factory=dict)  # system/tools/... of the last assembly
    measured_exact: bool = True
    last_call: CallFigures | None = None
    anchored: bool = False  # a provider call since the last compaction
    gauge_output_tokens: int = 0  # the last call's output as the gauge counts it
    added_since_call: int = 0  # tokens added after the last call (incl. framing)
    added_chars_since_call: Counter[ContentClass] = field(default_factory=Counter)
    totals: Totals = field(default_factory=Totals)
    cost_by_model: dict[str, float] = field(default_factory=dict)
    compactions: int = 0
    errors: ErrorLog = field(default_factory=ErrorLog)
    snapshot: BudgetSnapshot | None = None
    render_cache: RenderCache = field(default_factory=RenderCache)  # wire messages by id

    @property
    def id(self) -> str:
        return self.info.id

    # -- the one number ---------------------------------------------------------------------

    def used_tokens(self) -> tuple[int, bool]:
        """(tokens the next request will consume, estimated?)."""
        if self.anchored and self.last_call is not None:
            return self.anchor_tokens() + self.added_since_call, False
        whole = sum(self.measured.values()) + sum(self.message_tokens.values())
        return whole, True

    def anchor_tokens(self) -> int:
        """What the last provider call puts in the next request: its input (cached included)
        plus its output as the gauge counts it, less reasoning the provider strips (tokens)."""
        call = self.last_call
        assert call is not None
        usage = Usage(
            input_tokens=call.input_tokens,
            output_tokens=self.gauge_output_tokens,
            reasoning_tokens=call.reasoning_tokens,
            cache_read_tokens=call.cache_read_tokens,
            cache_write_tokens=call.cache_write_tokens,
        )
        dropped = call.reasoning_tokens if self.model.strips_reasoning else 0
        return predict_next_input(usage, 0, dropped)

    def publish(self, warnings: tuple[str, ...] = ()) -> BudgetSnapshot:
        used, estimated = self.used_tokens()
        basis = "exact" if self.measured_exact else "estimate"
        messages_tokens = None if not estimated else sum(self.message_tokens.values())
        items, more_warnings = breakdown(used, self.measured, messages_tokens, measured_basis=basis)
        window = self.model.context_window
        threshold = autocompact_threshold(self.model, self.config.compaction, self.config.budget)
        if used >= threshold:
            more_warnings += (
                f"{used:,} tokens is over the autocompact threshold ({threshold:,}): "
                "compact the session (session/compact) or start a new one",
            )
        self.snapshot = BudgetSnapshot(
            session_id=self.info.id,
            model=self.model.name,
            context_window=window,
            max_output_tokens=self.model.max_output_tokens,
            used_tokens=used,
            remaining_tokens=max(0, window - used),
            used_percentage=used_percentage(used, window),
            estimated=estimated,
            breakdown=items,
            autocompact_threshold=threshold,
            compactions=self.compactions,
            cost_total_usd=round(sum(self.cost_by_model.values()), 6),
            cost_by_model=dict(self.cost_by_model),
            totals=self.totals,
            last_call=self.last_call,
            last_estimate_error_pct=self.errors.last_error_pct,
            version=self.version,
            warnings=warnings + more_warnings,
        )
        return self.snapshot

    # -- changes ------------------------------------------------------------------------------

    def add_message(
        self, message: Message, tokens: int, chars_by_class: Counter[ContentClass], cost: float
    ) -> CallFigures | None:
        """Account for an appended message; returns the call figures when it carried usage."""
        self.messages.append(message)
        self.message_tokens[message.id] = tokens
        self.version += 1
        if message.usage is None:
            self.added_since_call += tokens
            self.added_chars_since_call.update(chars_by_class)
            return None
        predicted, _ = self.used_tokens()
        call = self.restore_call(
            message, predicted if self.anchored else None, record=True, content_tokens=tokens
        )
        self.totals = add_usage(self.totals, message.usage)
        model = message.model or self.model.name
        self.cost_by_model[model] = self.cost_by_model.get(model, 0.0) + cost
        return call

    def restore_call(
        self, message: Message, predicted: int | None, record: bool, content_tokens: int
    ) -> CallFigures:
        """Make `message` (the last one appended, carrying usage) the anchor of the gauge.

        A reported output far below the message's own count is a streaming snapshot, not the
        final figure (seen in real transcripts): the message's count stands in for it.
        """
        usage = message.usage
        assert usage is not None
        share = MEASURED_RULES.final_output_share
        self.gauge_output_tokens = max(usage.output_tokens, 0)
        if usage.output_tokens < share * content_tokens:
            self.gauge_output_tokens = content_tokens
        actual = usage.context_tokens
        error_pct = None
        if record and predicted is not None and actual > 0:
            error_pct = self.errors.record(predicted, actual).error_pct
        self.last_call = CallFigures(
            message_id=message.id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            predicted_tokens=predicted,
            error_pct=error_pct,
        )
        self.anchored = True
        self.added_since_call = 0
        self.added_chars_since_call = Counter()
        return self.last_call


def add_usage(totals: Totals, usage: Usage) -> Totals:
    return replace(
        totals,
        calls=totals.calls + 1,
        input_tokens=totals.input_tokens + usage.input_tokens,
        output_tokens=totals.output_tokens + usage.output_tokens,
        reasoning_tokens=totals.reasoning_tokens + usage.reasoning_tokens,
        cache_read_tokens=totals.cache_read_tokens + usage.cache_read_tokens,
        cache_write_tokens=totals.cache_write_tokens + usage.cache_write_tokens,
    )
