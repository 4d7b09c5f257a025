"""A session's state as immutable data.

`SessionData` is what a loaded session knows: its window of messages, what each costs, the
last provider call the gauge is anchored on, lifetime totals. Every change (`core.session.changes`)
goes through `core.session.evolve.evolve(data, change)`, which returns the next data and what
to learn from it; nothing else builds one. Its gauge is `core.session.gauge.gauge_snapshot`. Figures
are in tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tokend.core.budget.snapshot import CallFigures, PromptCacheFigures, Totals
from tokend.core.counting.framing import reply_priming
from tokend.core.models.catalog import ModelInfo
from tokend.core.session.message_log import MessageLog
from tokend.core.session.totals import add_usage as add_usage  # loading.py reads it here
from tokend.core.transcripts.replay import MEASURED_RULES
from tokend.core.types import ContentClass, Message, SessionInfo, Usage
from tokend.core.usage.accounting import (
    EstimateError,
    predict_next_input,
)
from tokend.core.usage.stats import TimeTally

ERROR_HISTORY = 200  # estimate errors kept per session (and persisted)


@dataclass(frozen=True, slots=True)
class Anchor:
    """The last provider call, as the gauge builds on it.

    `output_tokens` is the call's output as the gauge counts it (the message's own count when the
    reported figure was a streaming snapshot). `delta_tokens` are known changes since the call
    that no provider has seen yet: a prune frees its results and adds placeholders, so the gauge
    stays anchored and moves by exactly that much. `learn` is False once such a change happened:
    the next call's figure then mixes it with the added messages, which would teach calibration
    the wrong thing."""

    call: CallFigures
    output_tokens: int
    delta_tokens: int = 0
    learn: bool = True


@dataclass(frozen=True, slots=True)
class Added:
    """What was appended since the last provider call (the estimate the next call checks)."""

    tokens: int = 0  # as the gauge counts them (framing included)
    framing_tokens: int = 0
    fixed_tokens: int = 0  # images and other fixed amounts (not learnt from)
    raw_text_tokens: float = 0.0  # estimate of the text before the model's correction
    chars_by_class: Mapping[ContentClass, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionData:
    info: SessionInfo
    model: ModelInfo
    log: MessageLog  # from the last compaction boundary, oldest first, with their tokens
    version: int
    measured: Mapping[str, int] = field(default_factory=dict)  # system, tools, ... (last assembly)
    measured_exact: bool = True
    anchor: Anchor | None = None
    added: Added = Added()
    totals: Totals = Totals()
    cost_by_model: Mapping[str, float] = field(default_factory=dict)
    compactions: int = 0
    errors: tuple[EstimateError, ...] = ()
    times: TimeTally = TimeTally()  # every message of the session so far, all windows
    prompt_cache: PromptCacheFigures | None = None  # what the window's last cached call left
    pending_exact: frozenset[str] = frozenset()  # messages counted by estimate, exact to come

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def messages(self) -> Sequence[Message]:
        return self.log.messages

    @property
    def message_tokens(self) -> Mapping[str, int]:
        """Message id -> tokens as sent (framing, placeholders)."""
        return self.log.tokens

    def used_tokens(self) -> tuple[int, bool]:
        """(tokens the next request will consume, estimated?)."""
        if self.anchor is not None:
            return anchor_tokens(self.anchor, self.model) + self.added.tokens, False
        whole = sum(self.measured.values()) + self.log.total_tokens
        primed = reply_priming(self.model.provider, self.model.tokenizer)
        return whole + (primed if whole else 0), True  # an empty session has no request yet


def anchor_tokens(anchor: Anchor, model: ModelInfo) -> int:
    """What the last call puts in the next request: its input (cached included) plus its
    output as the gauge counts it, less reasoning the provider strips, plus known deltas."""
    call = anchor.call
    usage = Usage(
        input_tokens=call.input_tokens,
        output_tokens=anchor.output_tokens,
        reasoning_tokens=call.reasoning_tokens,
        cache_read_tokens=call.cache_read_tokens,
        cache_write_tokens=call.cache_write_tokens,
    )
    dropped = min(call.reasoning_tokens, anchor.output_tokens) if model.strips_reasoning else 0
    return predict_next_input(usage, 0, dropped) + anchor.delta_tokens


def call_figures(
    message_id: str, usage: Usage, predicted: int | None, error_pct: float | None
) -> CallFigures:
    """The provider call a message carried, with what the gauge had predicted for it."""
    return CallFigures(
        message_id=message_id,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        predicted_tokens=predicted,
        error_pct=error_pct,
        cleared_input_tokens=usage.cleared_input_tokens,
    )


def anchor_output(usage: Usage, content_tokens: int) -> int:
    """The call's output as the gauge counts it. A reported output far below the message's own
    count is a streaming snapshot, not the final figure (seen in real transcripts): the
    message's count stands in for it."""
    if usage.output_tokens < MEASURED_RULES.final_output_share * content_tokens:
        return content_tokens
    return max(usage.output_tokens, 0)
