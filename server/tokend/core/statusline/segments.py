"""The status line's segments, from tokend's snapshot and what Claude Code passed. Pure: the
daemon renders with it (`statusline/line`), and so does the command against an older daemon.

    claude-opus-4-6 · 77k/200k · 39% · compacts at 168k · $11.85 · 5h 42% ↻2h10m · cache 3m · compacted ×1

- `model`, `context` (used/window · percentage, `~` while estimated), `threshold` (where tokend
  compacts), `cost` (tokend's price of every call, 1-hour cache writes priced as such): always;
- `rate`: Claude Code's `rate_limits` buckets (`five_hour`, `seven_day`, per-model weekly ones),
  used percentage and the time to `resets_at`, when Claude Code passes them;
- `cache`: the prompt cache's time left (5 minutes, or 1 hour when the last call wrote to the
  1-hour cache), from the transcript's last provider call (`last_call`); `cache cold` once it
  expired;
- `compactions`: how many times the session was compacted, from the first.

The snapshot is the wire Snapshot (protocol.md). The context segment is coloured with the
editors' thresholds (green, yellow from 75%, red from 90%) when asked. Records and snapshots
are JSON objects (dicts). Imports nothing at run time (`tokend statusline` checks its segment
names with it).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported for annotations only: the command imports this module light
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

SEGMENTS = ("model", "context", "threshold", "cost", "rate", "cache", "compactions")
CACHE_TTL_S = {"5m": 300, "1h": 3600}
_COLOURS = {"green": "\033[32m", "yellow": "\033[33m", "red": "\033[31m"}
_RESET = "\033[0m"
_RATE_NAMES = {"five_hour": "5h", "seven_day": "7d"}

LastCall = tuple[float, int]  # noqa: UP040 (the type statement would need typing at run time)
"""(when, in epoch seconds; the prompt cache's lifetime, in seconds) of a transcript's last
provider call."""


def parse_segments(text: str) -> tuple[str, ...]:
    """`model,context,cost` -> the names, checked; ValueError names the known ones."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in SEGMENTS]
    if unknown or not names:
        raise ValueError(
            f"unknown segment {', '.join(unknown) or '(none given)'}: use {', '.join(SEGMENTS)}"
        )
    return names


def render(
    snapshot: Mapping[str, Any],
    given: Mapping[str, Any],
    segments: Sequence[str],
    *,
    colour: bool,
    now: float,
    last: LastCall | None,
) -> str:
    """The line: `snapshot` (wire Snapshot), `given` (Claude Code's JSON), `last` (the
    transcript's last provider call, for the cache segment)."""
    parts: list[str] = []
    for name in segments:
        text = _segment(name, snapshot, given, now, colour, last)
        if text:
            parts.append(text)
    return " · ".join(parts)


def _segment(
    name: str,
    s: Mapping[str, Any],
    given: Mapping[str, Any],
    now: float,
    colour: bool,
    last: LastCall | None,
) -> str | None:
    if name == "model":
        return str(s["model"])
    if name == "context":
        gauge = short_gauge(s)
        return _paint(gauge, percent_colour(s["usedPercentage"])) if colour else gauge
    if name == "threshold":
        return f"compacts at {short_tokens(s['autocompactThreshold'])}"
    if name == "cost":
        return f"${s['cost']['totalUsd']:.2f}"
    if name == "rate":
        return rate_text(given.get("rate_limits"), now)
    if name == "cache":
        return cache_text(last, now)
    if name == "compactions":
        n = s.get("compactions") or 0
        return f"compacted ×{n}" if n else None
    return None


def short_tokens(tokens: int) -> str:
    """86,012 -> "86k", 1,000,000 -> "1M", 950 -> "950"."""
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}".rstrip("0").rstrip(".") + "M"
    if tokens >= 1_000:
        return f"{tokens / 1_000:.0f}k"
    return str(tokens)


def short_gauge(s: Mapping[str, Any]) -> str:
    """`86k/200k · 43%` (`~` before the figure while it is estimated): what status bars show."""
    mark = "~" if s["estimated"] else ""
    used, window = short_tokens(s["usedTokens"]), short_tokens(s["contextWindow"])
    return f"{mark}{used}/{window} · {s['usedPercentage']:.0f}%"


def percent_colour(used_percentage: float) -> str:
    """The editors' thresholds: green, yellow from 75% of the window, red from 90%."""
    if used_percentage >= 90:
        return "red"
    return "yellow" if used_percentage >= 75 else "green"


def _paint(text: str, colour: str) -> str:
    return f"{_COLOURS[colour]}{text}{_RESET}"


def rate_text(limits: Any, now: float) -> str | None:
    """`5h 42% ↻2h10m · 7d 12% ↻3d4h` from Claude Code's rate_limits (None without them)."""
    if not isinstance(limits, dict):
        return None
    shown = []
    for key, bucket in limits.items():
        if not isinstance(bucket, dict):
            continue
        used = bucket.get("used_percentage")
        if not isinstance(used, int | float) or isinstance(used, bool):
            continue
        label = _RATE_NAMES.get(key) or str(key).replace("seven_day_", "7d ").replace("_", " ")
        left = _seconds_until(bucket.get("resets_at"), now)
        shown.append(f"{label} {used:.0f}%" + (f" ↻{_duration(left)}" if left else ""))
    return " · ".join(shown) or None


def _seconds_until(when: Any, now: float) -> float | None:
    """`resets_at` as epoch seconds (or milliseconds) or an ISO 8601 time -> seconds from now."""
    if isinstance(when, int | float) and not isinstance(when, bool):
        at = when / 1000 if when > 1e11 else float(when)
    elif isinstance(when, str):
        at_or_none = iso_seconds(when)
        if at_or_none is None:
            return None
        at = at_or_none
    else:
        return None
    return max(0.0, at - now)


def iso_seconds(text: str) -> float | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{max(1, minutes)}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h"


def cache_text(last: LastCall | None, now: float) -> str | None:
    """`cache 3m` (time left of the prompt cache the last provider call used or wrote),
    `cache cold` once it expired, None without a call."""
    if last is None:
        return None
    at, ttl = last
    left = at + ttl - now
    return f"cache {_duration(left)}" if left > 0 else "cache cold"


def last_call(newest_first: Iterable[Any]) -> LastCall | None:
    """(when, cache lifetime) of the last provider call among records given newest first:
    1 hour when the newest call that says how it wrote the cache wrote to the 1-hour cache,
    else 5 minutes; None when no record is an assistant record with usage and a time."""
    when: float | None = None
    ttl = CACHE_TTL_S["5m"]
    for record in newest_first:
        message = record.get("message") if isinstance(record, dict) else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if record.get("type") != "assistant" or not isinstance(usage, dict):
            continue
        if when is None:
            stamp = record.get("timestamp")
            when = iso_seconds(stamp) if isinstance(stamp, str) else None
            if when is None:
                return None
        split = usage.get("cache_creation")
        if isinstance(split, dict):
            one_hour = split.get("ephemeral_1h_input_tokens")
            if isinstance(one_hour, int) and one_hour > 0:
                ttl = CACHE_TTL_S["1h"]
            break
    return None if when is None else (when, ttl)
