"""Usage accounting: the next call's input predicted from the last call's usage, and how wrong it was.

All figures are tokens. The rule (verified on real Claude Code sessions, see core/transcripts/replay.py):
the next request re-sends everything the last request consumed (its whole input, cached or not)
plus everything the model wrote (its output, thinking included) plus what was added since.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from tokend.core.types import CompactionPart, Iteration, Message, Part, Usage
from tokend.core.types import EstimateError as EstimateError  # re-exported: its home was here

DEFAULT_ERROR_LOG_SIZE = 200


def predict_next_input(
    last_usage: Usage, added_tokens: int, reasoning_tokens_dropped: int = 0
) -> int:
    """Tokens the next call will consume as input.

    = last input (input + cache read + cache write) + last output - reasoning dropped + added.
    `reasoning_tokens_dropped` is for providers that strip earlier reasoning from the next request
    (Anthropic models before Opus 4.5 did, outside a tool loop); it cannot exceed the last output.
    """
    if added_tokens < 0 or reasoning_tokens_dropped < 0:
        raise ValueError("added_tokens and reasoning_tokens_dropped must be >= 0")
    resent_output = max(0, last_usage.output_tokens - reasoning_tokens_dropped)
    return last_usage.context_tokens + resent_output + added_tokens


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """Statistics of |error| in percent over the logged estimates (None when none are logged)."""

    count: int
    median_abs_error_pct: float | None
    p90_abs_error_pct: float | None
    max_abs_error_pct: float | None


def summarize_abs_errors(abs_errors_pct: Iterable[float]) -> ErrorSummary:
    """Median, 90th percentile (nearest rank) and max of absolute errors in percent."""
    ordered = sorted(abs_errors_pct)
    if not ordered:
        return ErrorSummary(0, None, None, None)
    rank = max(1, math.ceil(0.9 * len(ordered)))
    return ErrorSummary(
        count=len(ordered),
        median_abs_error_pct=statistics.median(ordered),
        p90_abs_error_pct=ordered[rank - 1],
        max_abs_error_pct=ordered[-1],
    )


class ErrorLog:
    """The last `size` estimate errors of one session (oldest dropped first)."""

    def __init__(self, size: int = DEFAULT_ERROR_LOG_SIZE) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self._errors: deque[EstimateError] = deque(maxlen=size)

    def record(self, predicted: int, actual: int) -> EstimateError:
        error = EstimateError(predicted=predicted, actual=actual)
        self._errors.append(error)
        return error

    @property
    def errors(self) -> tuple[EstimateError, ...]:
        return tuple(self._errors)

    @property
    def last_error_pct(self) -> float | None:
        """Signed error of the latest estimate in percent; None before the first."""
        return self._errors[-1].error_pct if self._errors else None

    def summary(self) -> ErrorSummary:
        return summarize_abs_errors(
            error.abs_error_pct for error in self._errors if math.isfinite(error.error_pct)
        )

    def __len__(self) -> int:
        return len(self._errors)


# -- provider-side compaction ------------------------------------------------------------------


def provider_compaction(parts: Iterable[Part]) -> CompactionPart | None:
    """The provider's own compaction among a message's parts (a boundary), if any."""
    for part in parts:
        if isinstance(part, CompactionPart) and part.provider is not None:
            return part
    return None


def holds_provider_compaction(messages: Iterable[Message]) -> bool:
    """Whether any of `messages` holds a provider's own compaction (`provider_compaction` of
    its parts), looked at in one loop: no call, nor generator, a message (a restarted daemon's
    first read of a 10,000-message session asks it of every one)."""
    for message in messages:
        for sp in message.parts:
            if isinstance(sp.part, CompactionPart) and sp.part.provider is not None:
                return True
    return False


def iteration_usage(iteration: Iteration) -> Usage:
    return Usage(
        input_tokens=iteration.input_tokens,
        output_tokens=iteration.output_tokens,
        cache_read_tokens=iteration.cache_read_tokens,
        cache_write_tokens=iteration.cache_write_tokens,
    )


def billed_usages(usage: Usage, compaction: CompactionPart | None) -> tuple[Usage, ...]:
    """Every sampling iteration a call was billed for. With iterations (Anthropic's
    `usage.iterations`), each of them: the top-level figures leave the compaction iteration
    out. Without, the call's usage alone."""
    if compaction is None or not compaction.iterations:
        return (usage,)
    return tuple(iteration_usage(i) for i in compaction.iterations)


def total_usage(usages: Iterable[Usage]) -> Usage:
    """The sum of several iterations' figures, field by field."""
    fields = [0, 0, 0, 0, 0, 0]
    for u in usages:
        for index, value in enumerate(
            (
                u.input_tokens,
                u.output_tokens,
                u.reasoning_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.cache_write_1h_tokens,
            )
        ):
            fields[index] += value
    return Usage(*fields)


def anchor_usage(usage: Usage, compaction: CompactionPart | None) -> Usage | None:
    """The figures the gauge anchors on after a call: its last "message" iteration after the
    last compaction (what the next request re-sends: the compacted context and the reply), or
    the call's usage when it reports no iterations. None when the call ended with a compaction
    (OpenAI's /responses/compact, or Anthropic's pause after compaction): no figure describes
    the context after it."""
    if compaction is None or not compaction.iterations:
        return usage
    last = compaction.iterations[-1]
    if last.type == "compaction":
        return None
    only_message = len([i for i in compaction.iterations if i.type != "compaction"]) == 1
    if only_message:  # the top-level figures are that iteration's, reasoning included
        return usage
    return iteration_usage(last)
