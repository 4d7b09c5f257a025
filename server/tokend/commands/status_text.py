"""The gauge as `tokend status` prints it, from the wire Snapshot (protocol.md): the one-line
gauge and Claude Code's statusLine JSON shape. Plain functions of dicts that import nothing, so
the quick path of `tokend status` (commands/status_quick.py) prints them as the full one does.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def gauge_line(s: dict[str, Any]) -> str:
    """The one-line gauge `tokend status` prints, from a wire Snapshot."""
    basis = "estimated" if s["estimated"] else "from usage"
    return (
        f"{s['model']}  {s['usedTokens']:,} / {s['contextWindow']:,} tokens "
        f"({s['usedPercentage']:.1f}%)  · compacts at {s['autocompactThreshold']:,}  "
        f"· ${s['cost']['totalUsd']:.2f}  · {basis}"
    )


def claude_code_status(
    s: dict[str, Any], *, cwd: str, project_dir: str | None, transcript_path: str | None = None
) -> dict[str, Any]:
    """The snapshot in the JSON shape Claude Code pipes to its statusLine command, so scripts
    written for it work on tokend's figures unchanged. `current_usage` is the last provider
    call (null before any); `total_*` add up every call; the percentages are tokend's gauge.
    The cost block's durations and lines come from every message of the session (all windows);
    `total_api_duration_ms` is null until a client reports how long a reply took."""
    last = s.get("lastCall")
    time = s["time"]
    totals = s["totals"]
    used_pct = round(s["usedPercentage"], 1)
    return {
        "session_id": s["sessionId"],
        "transcript_path": transcript_path,
        "cwd": cwd,
        "model": {"id": s["model"], "display_name": s["model"]},
        "workspace": {"current_dir": cwd, "project_dir": project_dir or cwd},
        "cost": {
            "total_cost_usd": s["cost"]["totalUsd"],
            "total_duration_ms": time["wallMs"],
            "total_api_duration_ms": time["apiMs"],
            "total_lines_added": time["linesAdded"],
            "total_lines_removed": time["linesRemoved"],
        },
        "context_window": {
            "total_input_tokens": totals["inputTokens"]
            + totals["cacheReadTokens"]
            + totals["cacheWriteTokens"],
            "total_output_tokens": totals["outputTokens"],
            "context_window_size": s["contextWindow"],
            "used_percentage": used_pct,
            "remaining_percentage": round(max(0.0, 100.0 - used_pct), 1),
            "current_usage": None
            if last is None
            else {
                "input_tokens": last["inputTokens"],
                "output_tokens": last["outputTokens"],
                "cache_creation_input_tokens": last["cacheWriteTokens"],
                "cache_read_input_tokens": last["cacheReadTokens"],
            },
        },
        "exceeds_200k_tokens": s["usedTokens"] > 200_000,
        "tokend": {
            "usedTokens": s["usedTokens"],
            "estimated": s["estimated"],
            "autocompactThreshold": s["autocompactThreshold"],
        },
    }


def folder_uri(path: str) -> str:
    """file:// URI of an absolute path, escaped as pathlib's as_uri escapes it."""
    return "file://" + "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in os.fsencode(path))


def folder_path(uri: str | None) -> str | None:
    """A file URI's path, its %XX escapes decoded (urllib's unquote, without urllib)."""
    if not uri or not uri.startswith("file://"):
        return None
    path = uri[len("file://") :].partition("?")[0].partition("#")[0]
    if path and path[0] != "/":  # file://host/path
        path = "/" + path.partition("/")[2]
    raw, i = bytearray(), 0
    while i < len(path):
        if path[i] == "%" and _hex(path[i + 1 : i + 3]):
            raw.append(int(path[i + 1 : i + 3], 16))
            i += 3
        else:
            raw += path[i].encode()
            i += 1
    return raw.decode("utf-8", "replace")


def _hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)
