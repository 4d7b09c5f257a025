"""Replay results, and the baseline replay a peer would do: predict each provider call's input
from the previous call's usage plus chars/4 of what was added, and compare with what the
provider reported. tokend's own replay drives the live service (commands/replay.py); this
module's `replay` with PlainEstimator is the baseline it is measured against.

What the next call's input contains (measured on real Claude Code sessions, claude-opus-4-6):
- everything the previous call consumed (input + cache read + cache write), plus
- the previous call's whole output, thinking included: the assistant turn, thinking blocks with
  their signatures, is re-sent, so no reasoning is dropped (reasoning_tokens_dropped = 0), plus
- the new tool results / user prompts, plus about 20 tokens of framing per new message.
- The transcript's output_tokens is a streaming snapshot (its records are written per content block,
  before the final usage arrives): often final, sometimes 1-25 tokens for a long answer. When the
  reported output is below half of the estimate of the assistant's content, that
  estimate stands in for it.
All figures are tokens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from tokend.core.counting.framing import ANTHROPIC_MESSAGE_OVERHEAD
from tokend.core.counting.render import part_text
from tokend.core.transcripts.events import CompactionBoundary, ProviderCall, TranscriptEvent
from tokend.core.types import Part, ReasoningPart
from tokend.core.usage.accounting import EstimateError, predict_next_input, summarize_abs_errors

DEFAULT_MODEL = "unknown"


@dataclass(frozen=True, slots=True)
class PredictionRules:
    """How a prediction treats what the transcript does not say exactly (tokens / ratios).

    message_overhead_tokens: framing per new user/tool message (measured: ~20 on claude-opus-4-6).
    final_output_share: a reported output below this share of the estimated assistant content is
    taken for a streaming snapshot and replaced by the estimate (0 = always trust the report).
    """

    message_overhead_tokens: int = ANTHROPIC_MESSAGE_OVERHEAD
    final_output_share: float = 0.5


MEASURED_RULES = PredictionRules()
PLAIN_RULES = PredictionRules(message_overhead_tokens=0, final_output_share=0.0)


class ReplayEstimator(Protocol):
    """Estimates the tokens parts add to a prompt, and may learn from actual counts."""

    def estimate(self, parts: Sequence[Part], model: str) -> int: ...

    def learn(self, parts: Sequence[Part], model: str, actual_tokens: int) -> None: ...


@dataclass(frozen=True, slots=True)
class PlainEstimator:
    """The baseline: len(text) / chars_per_token over the rendered parts; learns nothing."""

    chars_per_token: float = 4.0

    def estimate(self, parts: Sequence[Part], model: str) -> int:
        return round(sum(len(part_text(part)) for part in parts) / self.chars_per_token)

    def learn(self, parts: Sequence[Part], model: str, actual_tokens: int) -> None:
        return None


@dataclass(frozen=True, slots=True)
class ReplayCall:
    """One provider call: predicted input (None when nothing earlier in its window) vs actual."""

    predicted: int | None
    actual: int

    @property
    def error_pct(self) -> float | None:
        if self.predicted is None:
            return None
        return EstimateError(self.predicted, self.actual).error_pct


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """|error| statistics (percent) over the calls that had a prediction; `calls` counts those."""

    calls: int
    median_abs_error_pct: float | None
    p90_abs_error_pct: float | None
    max_abs_error_pct: float | None


@dataclass(frozen=True, slots=True)
class ReplayResult:
    calls: tuple[ReplayCall, ...]
    summary: ReplaySummary

    def to_json(self) -> dict[str, Any]:
        """{"calls": [{"predicted", "actual", "errorPct"}], "summary": {...}}; tokens and percent."""
        return {
            "calls": [
                {"predicted": call.predicted, "actual": call.actual, "errorPct": call.error_pct}
                for call in self.calls
            ],
            "summary": {
                "calls": self.summary.calls,
                "medianAbsErrorPct": self.summary.median_abs_error_pct,
                "p90AbsErrorPct": self.summary.p90_abs_error_pct,
                "maxAbsErrorPct": self.summary.max_abs_error_pct,
            },
        }


def replay(
    events: Iterable[TranscriptEvent],
    estimator: ReplayEstimator,
    rules: PredictionRules = MEASURED_RULES,
    default_model: str = DEFAULT_MODEL,
) -> ReplayResult:
    """Play `events` (from core.transcripts.events.parse_transcript) through `estimator`.
    PLAIN_RULES with PlainEstimator() is the baseline: last context + reported output + chars/4."""
    calls: list[ReplayCall] = []
    previous: ProviderCall | None = None
    new_input: list[Part] = []  # user prompts and tool results since the previous call
    new_messages = 0
    previous_output: list[Part] = []  # the previous call's assistant content
    for event in events:
        if isinstance(event, CompactionBoundary):
            previous, new_input, new_messages, previous_output = None, [], 0, []
        elif isinstance(event, ProviderCall):
            model = event.model or default_model
            actual = event.usage.context_tokens
            if previous is None:
                calls.append(ReplayCall(predicted=None, actual=actual))
            else:
                calls.append(
                    _predict_and_learn(
                        previous,
                        actual,
                        previous_output,
                        new_input,
                        new_messages,
                        estimator,
                        model,
                        rules,
                    )
                )
            previous, new_input, new_messages, previous_output = event, [], 0, []
        elif event.role == "assistant":
            previous_output.extend(event.parts)
        else:
            new_input.extend(event.parts)
            new_messages += 1
    return ReplayResult(calls=tuple(calls), summary=summarize_calls(calls))


def summarize_calls(calls: Sequence[ReplayCall]) -> ReplaySummary:
    """|error| statistics over the calls that had a prediction."""
    errors = [call.error_pct for call in calls if call.error_pct is not None]
    stats = summarize_abs_errors(abs(error) for error in errors if math.isfinite(error))
    return ReplaySummary(
        calls=stats.count,
        median_abs_error_pct=stats.median_abs_error_pct,
        p90_abs_error_pct=stats.p90_abs_error_pct,
        max_abs_error_pct=stats.max_abs_error_pct,
    )


def _predict_and_learn(
    previous: ProviderCall,
    actual: int,
    previous_output: Sequence[Part],
    new_input: Sequence[Part],
    new_messages: int,
    estimator: ReplayEstimator,
    model: str,
    rules: PredictionRules,
) -> ReplayCall:
    reported_output = previous.usage.output_tokens
    estimated_output = estimator.estimate(previous_output, model)
    output_is_final = reported_output >= rules.final_output_share * estimated_output
    resent_output = reported_output if output_is_final else estimated_output
    overhead = rules.message_overhead_tokens * new_messages
    added = estimator.estimate(new_input, model) + overhead
    last_usage = replace(previous.usage, output_tokens=resent_output)
    predicted = predict_next_input(last_usage, added)
    # Learn: what the new input really cost, and (when the count is trustworthy) the assistant's
    # visible content. Thinking is skipped there: its billed tokens may exceed the text kept.
    input_actual = actual - previous.usage.context_tokens - resent_output - overhead
    estimator.learn(new_input, model, input_actual)
    has_reasoning = any(isinstance(part, ReasoningPart) for part in previous_output)
    if output_is_final and not has_reasoning:
        estimator.learn(previous_output, model, reported_output)
    return ReplayCall(predicted=predicted, actual=actual)
