"""What `tokend status` shows, as the session row keeps it: the first cold call's line with no
daemon and no line kept, read with sqlite3 alone (commands/status_row.py). Pure; imports nothing.

The session's owner writes `status_row(snapshot, settings)` into the row's gauge state (key
`KEY`, core.session.gauge_state) with every change, in the change's own transaction: the snapshot's
figures that the line and Claude Code's statusLine shape print, and `settings`, the config files
those figures were computed under (each file's path and stamp: mtime in ns, size, inode; None
when absent). `snapshot_of_row` gives them back as the wire Snapshot's keys (protocol.md) that
commands/status_text.py prints, or None when the block is missing or not of this shape.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from tokend.core.budget.snapshot import BudgetSnapshot

KEY = "status"
FORMAT = 1  # bumped when the shape changes: an older block is not read (the store is read whole)


def status_row(snapshot: BudgetSnapshot, settings: list[Any]) -> dict[str, Any]:
    """The block kept under `KEY` (JSON types only)."""
    s, call, totals, times = snapshot, snapshot.last_call, snapshot.totals, snapshot.times
    return {
        "format": FORMAT,
        "version": s.version,
        "settings": settings,
        "model": s.model,
        "gauge": [s.used_tokens, s.used_percentage, s.context_window, s.estimated],
        "threshold": s.autocompact_threshold,
        "cost": s.cost_total_usd,
        "totals": [
            totals.input_tokens,
            totals.output_tokens,
            totals.cache_read_tokens,
            totals.cache_write_tokens,
        ],
        "time": [
            times.wall_duration_ms,
            times.api_duration_ms,
            times.lines_added,
            times.lines_removed,
        ],
        "lastCall": None
        if call is None
        else [
            call.input_tokens,
            call.output_tokens,
            call.cache_read_tokens,
            call.cache_write_tokens,
        ],
    }


def has_block(block: Any) -> bool:
    """A block of this shape's format (of whichever version)."""
    return isinstance(block, dict) and block.get("format") == FORMAT


def snapshot_of_row(block: Any, session_id: str, version: int) -> dict[str, Any] | None:
    """The wire Snapshot's keys the line and the statusLine shape print, from a block written at
    `version`; None when there is none, or it is of another version or shape."""
    if not has_block(block) or block.get("version") != version:
        return None
    try:
        used, percentage, window, estimated = block["gauge"]
        wall, api, added, removed = block["time"]
        total_in, total_out, total_read, total_write = block["totals"]
        call = block["lastCall"]
        snapshot: dict[str, Any] = {
            "sessionId": session_id,
            "version": version,
            "model": block["model"],
            "usedTokens": used,
            "usedPercentage": percentage,
            "contextWindow": window,
            "estimated": estimated,
            "autocompactThreshold": block["threshold"],
            "cost": {"totalUsd": block["cost"]},
            "time": {"wallMs": wall, "apiMs": api, "linesAdded": added, "linesRemoved": removed},
            "totals": {
                "inputTokens": total_in,
                "outputTokens": total_out,
                "cacheReadTokens": total_read,
                "cacheWriteTokens": total_write,
            },
            "lastCall": None if call is None else _call(call),
        }
    except (KeyError, TypeError, ValueError):
        return None
    return snapshot


def _call(call: list[int]) -> dict[str, int]:
    read_in, out, read, write = call
    return {
        "inputTokens": read_in,
        "outputTokens": out,
        "cacheReadTokens": read,
        "cacheWriteTokens": write,
    }
