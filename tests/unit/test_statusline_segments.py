"""The status line's segments, each from its own source: Claude Code's rate_limits, the
transcript's last provider call (the prompt cache's lifetime), tokend's snapshot."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tokend.commands.statusline_segments import (
    SEGMENTS,
    cache_text,
    parse_segments,
    rate_text,
    render,
)

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC).timestamp()
SNAPSHOT = {
    "model": "claude-opus-4-6",
    "usedTokens": 185_000,
    "contextWindow": 200_000,
    "usedPercentage": 92.5,
    "estimated": False,
    "autocompactThreshold": 168_000,
    "cost": {"totalUsd": 11.854},
    "compactions": 2,
}


def _call(at: str, one_hour: int, five_minutes: int) -> str:
    usage = {
        "input_tokens": 3,
        "output_tokens": 10,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": one_hour + five_minutes,
        "cache_creation": {
            "ephemeral_1h_input_tokens": one_hour,
            "ephemeral_5m_input_tokens": five_minutes,
        },
    }
    return json.dumps(
        {"type": "assistant", "timestamp": at, "message": {"role": "assistant", "usage": usage}}
    )


def test_rate_limits_show_used_percentage_and_time_to_reset() -> None:
    limits = {
        "five_hour": {"used_percentage": 42.4, "resets_at": "2026-11-26T14:10:00Z"},
        "seven_day": {"used_percentage": 12, "resets_at": NOW + 3 * 86400 + 4 * 3600 + 30},
        "seven_day_opus": {"used_percentage": 7.6},
        "junk": "x",
    }
    assert rate_text(limits, NOW) == "5h 42% ↻2h10m · 7d 12% ↻3d4h · 7d opus 8%"
    assert rate_text(None, NOW) is None and rate_text({"five_hour": {}}, NOW) is None


def test_the_cache_lifetime_comes_from_the_last_calls_cache_write(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(_call("2026-11-26T11:40:00Z", 5000, 0) + "\n")
    assert cache_text(str(transcript), NOW) == "cache 40m"  # a 1-hour write, 20 minutes ago
    with transcript.open("a") as out:
        out.write(_call("2026-11-26T11:58:00Z", 0, 300) + "\n")
        out.write('{"type":"user","message":{"role":"user","content":"next"}}\n')
    assert cache_text(str(transcript), NOW) == "cache 3m"  # the last call wrote for 5 minutes
    assert cache_text(str(transcript), NOW + 600) == "cache cold"
    assert cache_text(str(tmp_path / "missing.jsonl"), NOW) is None


def test_segments_in_the_order_asked_colour_from_the_editors_thresholds(tmp_path: Path) -> None:
    given = {"rate_limits": {"five_hour": {"used_percentage": 50}}}
    plain = render(SNAPSHOT, given, SEGMENTS, colour=False, now=NOW)
    assert plain == (
        "claude-opus-4-6 · 185k/200k · 92% · compacts at 168k · $11.85 · 5h 50% · compacted ×2"
    )
    red = render(SNAPSHOT, given, ("context",), colour=True, now=NOW)
    assert red == "\033[31m185k/200k · 92%\033[0m"
    calm = render(
        {**SNAPSHOT, "usedPercentage": 40.0, "compactions": 0}, {}, SEGMENTS, colour=False
    )
    assert "compacted" not in calm and "5h" not in calm
    assert parse_segments("cost, model") == ("cost", "model")
    with pytest.raises(ValueError, match="unknown segment speed: use model, context"):
        parse_segments("model,speed")
