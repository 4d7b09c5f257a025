"""What a session's gauge needs besides its message bodies, as JSON the session row keeps.

The session's owner writes it with every change (core.commit's figures); a restarted daemon
builds the session's snapshot from it and the row's other figures alone, and reads the message
bodies only when something needs them (core.session.message_log's lazy log). It holds: the number of
live messages and their tokens in all, the gated tool results' tally, the anchor (the last
provider call) and what was added since, the lifetime totals and costs, the prompt cache its
last cached call left, the time figures.
Written at version `version`: a row whose state is of another version is loaded whole. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from tokend.core.budget.snapshot import CallFigures, PromptCacheFigures, Totals
from tokend.core.session.data import Added, Anchor, SessionData
from tokend.core.session.message_log import GatedTally
from tokend.core.types import ContentClass
from tokend.core.usage.stats import TimeTally

FORMAT = 2  # bumped when the shape changes: an older state is ignored (the session loads whole)


def gauge_state_json(data: SessionData) -> dict[str, Any]:
    """`data`'s figures as the session row keeps them (JSON types only)."""
    anchor, added, times = data.anchor, data.added, data.times
    return {
        "format": FORMAT,
        "version": data.version,
        "messages": len(data.log.messages),
        "messageTokens": data.log.total_tokens,
        "gated": [data.log.gated.count, data.log.gated.chars],
        "anchor": None
        if anchor is None
        else {
            "call": _call_json(anchor.call),
            "outputTokens": anchor.output_tokens,
            "deltaTokens": anchor.delta_tokens,
            "learn": anchor.learn,
        },
        "added": [
            added.tokens,
            added.framing_tokens,
            added.fixed_tokens,
            added.raw_text_tokens,
            dict(added.chars_by_class),
        ],
        "totals": _totals_json(data.totals),
        "costs": dict(data.cost_by_model),
        "pendingExact": len(data.pending_exact),  # estimates: a reload must count them
        "promptCache": None
        if (cache := data.prompt_cache) is None
        else [cache.cached_tokens, cache.ttl_s, cache.last_call_at.isoformat()],
        "times": {
            "startedAt": _iso(times.started_at),
            "endedAt": _iso(times.ended_at),
            "apiUs": None
            if times.api_duration is None
            else times.api_duration // timedelta(0, 0, 1),
            "lines": [times.lines_added, times.lines_removed],
            "openEdits": {k: list(v) for k, v in times.open_edits.items()},
        },
    }


class GaugeState:
    """A stored state, read back (`of` returns None for one that cannot be used)."""

    __slots__ = (
        "added",
        "anchor",
        "costs",
        "gated",
        "messages",
        "prompt_cache",
        "times",
        "tokens",
        "totals",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.messages = int(raw["messages"])
        self.tokens = int(raw["messageTokens"])
        self.gated = GatedTally(int(raw["gated"][0]), int(raw["gated"][1]))
        a = raw["anchor"]
        self.anchor = (
            None
            if a is None
            else Anchor(
                _call_of(a["call"]), int(a["outputTokens"]), int(a["deltaTokens"]), bool(a["learn"])
            )
        )
        tokens, framing, fixed, raw_text, chars = raw["added"]
        classes = {cast(ContentClass, k): int(v) for k, v in dict(chars).items()}
        self.added = Added(int(tokens), int(framing), int(fixed), float(raw_text), classes)
        self.totals = Totals(**{k: int(v) for k, v in raw["totals"].items()})
        self.costs = {str(k): float(v) for k, v in raw["costs"].items()}
        cache = raw["promptCache"]
        self.prompt_cache = (
            None
            if cache is None
            else PromptCacheFigures(int(cache[0]), int(cache[1]), datetime.fromisoformat(cache[2]))
        )
        t = raw["times"]
        self.times = TimeTally(
            _when(t["startedAt"]),
            _when(t["endedAt"]),
            None if t["apiUs"] is None else timedelta(microseconds=int(t["apiUs"])),
            int(t["lines"][0]),
            int(t["lines"][1]),
            {str(k): (int(v[0]), int(v[1])) for k, v in t["openEdits"].items()},
        )

    @classmethod
    def of(cls, raw: Mapping[str, Any] | None, version: int) -> GaugeState | None:
        """The state stored at `version`, or None (none, another version or format, damaged)."""
        if not raw or raw.get("format") != FORMAT or raw.get("version") != version:
            return None
        if raw.get("pendingExact"):  # written before an exact count landed: load whole
            return None
        try:
            return cls(raw)
        except (KeyError, TypeError, ValueError, IndexError):
            return None


def _call_json(call: CallFigures) -> dict[str, Any]:
    return {
        "messageId": call.message_id,
        "usage": [
            call.input_tokens,
            call.output_tokens,
            call.reasoning_tokens,
            call.cache_read_tokens,
            call.cache_write_tokens,
        ],
        "predicted": call.predicted_tokens,
        "errorPct": call.error_pct,
        "cleared": call.cleared_input_tokens,
    }


def _call_of(raw: Mapping[str, Any]) -> CallFigures:
    i, o, r, cr, cw = (int(n) for n in raw["usage"])
    predicted = raw["predicted"]
    error = raw["errorPct"]
    return CallFigures(
        str(raw["messageId"]),
        i,
        o,
        r,
        cr,
        cw,
        None if predicted is None else int(predicted),
        None if error is None else float(error),
        int(raw.get("cleared", 0)),  # states written before context editing have none
    )


def _totals_json(totals: Totals) -> dict[str, int]:
    return {
        "calls": totals.calls,
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "reasoning_tokens": totals.reasoning_tokens,
        "cache_read_tokens": totals.cache_read_tokens,
        "cache_write_tokens": totals.cache_write_tokens,
    }


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def _when(raw: str | None) -> datetime | None:
    return None if raw is None else datetime.fromisoformat(raw)
