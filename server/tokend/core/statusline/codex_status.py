"""What a Codex rollout says about the session right now, for the status line: Codex's own
figures from its newest `token_count` event (core/transcripts/codex_rollout.py describes the records).

    {"type": "event_msg", "timestamp": "...", "payload": {"type": "token_count",
     "info": {"last_token_usage": {...}, "model_context_window": 272000, ...} | null,
     "rate_limits": {"primary": {"used_percent": 42.0, "window_minutes": 300,
                                 "resets_at": 1763483205},
                     "secondary": {"used_percent": 12.0, "window_minutes": 10080,
                                   "resets_at": 1763606387}} | null}}

Older Codex releases wrote `resets_in_seconds` (from the record's time) instead of `resets_at`.
The rate limits come out in the shape Claude Code passes its own (`five_hour`, `seven_day`:
`used_percentage`, `resets_at`), so core.statusline.segments renders both agents' alike. Pure, and
imports nothing at run time (`tokend statusline codex` uses it before any daemon answers).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TypeGuard

_WINDOW_NAMES = {300: "five_hour", 10080: "seven_day"}


def rate_limits(newest_first: Iterable[Any]) -> dict[str, Any] | None:
    """The newest token_count's rate limits, in Claude Code's shape (None without any)."""
    for record in newest_first:
        payload = _token_count(record)
        if payload is None or not isinstance(payload.get("rate_limits"), dict):
            continue
        limits: dict[str, Any] = {}
        for key in ("primary", "secondary"):
            bucket = payload["rate_limits"].get(key)
            used = bucket.get("used_percent") if isinstance(bucket, dict) else None
            if not _number(used):
                continue
            assert isinstance(bucket, dict)
            limits[_window_name(bucket.get("window_minutes"), key)] = {
                "used_percentage": used,
                "resets_at": _resets_at(bucket, record.get("timestamp")),
            }
        if limits:
            return limits
    return None


def last_usage(newest_first: Iterable[Any]) -> tuple[int, int] | None:
    """(tokens in the window after the last call, the window) from the newest token_count
    with usage: the call's input (cached included) and output, less the reasoning Codex does
    not send back (the figure tokend's gauge anchors on)."""
    for record in newest_first:
        payload = _token_count(record)
        info = payload.get("info") if payload is not None else None
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            continue
        usage, window = info["last_token_usage"], info.get("model_context_window")
        counts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
        reasoning = usage.get("reasoning_output_tokens") or 0
        if (
            not all(isinstance(c, int) for c in counts)
            or not isinstance(window, int)
            or window <= 0
        ):
            return None
        return max(0, counts[0] + counts[1] - min(reasoning, counts[1])), window
    return None


def model(newest_first: Iterable[Any]) -> str | None:
    """The model of the newest turn_context."""
    for record in newest_first:
        payload = record.get("payload") if isinstance(record, dict) else None
        if record.get("type") == "turn_context" and isinstance(payload, dict):
            name = payload.get("model")
            if isinstance(name, str) and name:
                return name
    return None


def _token_count(record: Any) -> dict[str, Any] | None:
    if not isinstance(record, dict) or record.get("type") != "event_msg":
        return None
    payload = record.get("payload")
    if isinstance(payload, dict) and payload.get("type") == "token_count":
        return payload
    return None


def _window_name(minutes: Any, key: str) -> str:
    """300 -> five_hour, 10080 -> seven_day, else `2h`, `3d` or the bucket's own name."""
    if not isinstance(minutes, int) or minutes <= 0:
        return key
    if minutes in _WINDOW_NAMES:
        return _WINDOW_NAMES[minutes]
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"


def _resets_at(bucket: dict[str, Any], stamp: Any) -> float | None:
    at = bucket.get("resets_at")
    if _number(at):
        return float(at)
    after = bucket.get("resets_in_seconds")
    if _number(after) and isinstance(stamp, str):
        from tokend.core.statusline.segments import iso_seconds

        written = iso_seconds(stamp)
        return None if written is None else written + float(after)
    return None


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
