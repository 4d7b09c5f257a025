"""Codex's own figures from a rollout's newest token_count (core/statusline/codex_status.py), in the
shapes Codex has written: rate limits with `resets_at`, and older ones with
`resets_in_seconds` from the record's time."""

from __future__ import annotations

from tokend.core.statusline import codex_status
from tokend.core.statusline.segments import rate_text

WRITTEN = "2026-11-26T10:00:00.000Z"
AT = 1795687200.0  # WRITTEN in epoch seconds


def token_count(rate_limits: object, info: object = None) -> dict:
    payload = {"type": "token_count", "info": info, "rate_limits": rate_limits}
    return {"timestamp": WRITTEN, "type": "event_msg", "payload": payload}


def test_the_newest_rate_limits_in_claude_codes_shape() -> None:
    newer = token_count(
        {
            "primary": {"used_percent": 42.0, "window_minutes": 300, "resets_at": AT + 7800},
            "secondary": {"used_percent": 12.5, "window_minutes": 10080, "resets_at": AT + 90000},
        }
    )
    older = token_count({"primary": {"used_percent": 1.0, "window_minutes": 300}})
    limits = codex_status.rate_limits([newer, older])
    assert limits == {
        "five_hour": {"used_percentage": 42.0, "resets_at": AT + 7800},
        "seven_day": {"used_percentage": 12.5, "resets_at": AT + 90000},
    }
    assert rate_text(limits, AT) == "5h 42% ↻2h10m · 7d 12% ↻1d1h"


def test_older_rollouts_reset_in_seconds_after_the_record_and_other_windows() -> None:
    record = token_count(
        {
            "primary": {"used_percent": 7, "window_minutes": 60, "resets_in_seconds": 600},
            "secondary": {"used_percent": 3, "window_minutes": 2880, "resets_in_seconds": 3600},
        }
    )
    limits = codex_status.rate_limits([record])
    assert limits == {
        "1h": {"used_percentage": 7, "resets_at": AT + 600},
        "2d": {"used_percentage": 3, "resets_at": AT + 3600},
    }
    assert rate_text(limits, AT) == "1h 7% ↻10m · 2d 3% ↻1h00m"


def test_no_rate_limits_and_codexs_context_figure() -> None:
    assert codex_status.rate_limits([token_count(None), {"type": "turn_context"}]) is None
    usage = {"input_tokens": 9000, "output_tokens": 500, "reasoning_output_tokens": 200}
    info = {"last_token_usage": usage, "model_context_window": 272_000}
    assert codex_status.last_usage([token_count(None, None), token_count(None, info)]) == (
        9300,
        272_000,
    )
    assert codex_status.last_usage([token_count(None, {**info, "model_context_window": 0})]) is None
    context = {"type": "turn_context", "payload": {"model": "gpt-5-codex"}}
    assert codex_status.model([token_count(None), context]) == "gpt-5-codex"
