"""`tokend statusline codex [ROLLOUT]`: the status line of a Codex session, for a shell prompt
or tmux (Codex runs no status-line command; nothing comes on stdin).

The daemon follows the rollout (without ROLLOUT: Codex's sessions folder, and the line is the
rollout written last) and renders the same segments as for Claude Code (statusline/line with
`agent: codex`); the rate limits are Codex's own, from the rollout's newest `token_count`.
Before the daemon answers, the line is made from that newest `token_count` (Codex's own figure
of the context and its rate limits), else the last line printed for that session. What is here
runs before any daemon answers, so it imports nothing heavy.
"""

from __future__ import annotations

import os

from tokend.adapters import rendezvous
from tokend.commands.file_tail import tail_lines
from tokend.commands.statusline_known import remembered_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

TAIL_BYTES = 256 << 10  # how much of the rollout's end is read for Codex's own figures


def sessions_folder() -> str:
    """Where Codex writes its rollouts: $CODEX_HOME/sessions (default ~/.codex/sessions)."""
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(home, "sessions")


def given_for(rollout: str | None) -> dict[str, Any]:
    """What statusline/line is given for a Codex session: the rollout (absent: the newest),
    the folder whose config picks the segments, and a key for the line remembered."""
    given: dict[str, Any] = {"cwd": os.getcwd(), "session_id": "codex"}
    if rollout is not None:
        given["transcript_path"] = rollout
        name = os.path.basename(rollout).removesuffix(".jsonl")
        given["session_id"] = name if name.startswith("rollout-") else "codex"
    return given


def newest_rollout(folder: str) -> str | None:
    """The rollout-*.jsonl under `folder` written last (None when there is none)."""
    best: tuple[float, str] | None = None
    for root, _, files in os.walk(folder):
        for name in files:
            if name.startswith("rollout-") and name.endswith(".jsonl"):
                path = os.path.join(root, name)
                try:
                    when = os.stat(path).st_mtime
                except OSError:
                    continue
                if best is None or when > best[0]:
                    best = (when, path)
    return best[1] if best else None


def codex_known_line(
    given: dict[str, Any], now: float, segments: tuple[str, ...] | None = None
) -> str:
    """The line from Codex's own figures in the rollout's end, else the last line printed for
    the session with these `segments`, else `tokend: starting`."""
    from tokend.core.statusline import codex_status
    from tokend.core.statusline.segments import rate_text, short_tokens

    path = given.get("transcript_path") or newest_rollout(sessions_folder())
    records = list(_newest_records(path)) if path else []
    figures = codex_status.last_usage(records)
    if figures is not None:
        used, window = figures
        parts = [codex_status.model(records) or "codex"]
        parts.append(f"{short_tokens(used)}/{short_tokens(window)} · {100 * used / window:.0f}%")
        rates = rate_text(codex_status.rate_limits(records), now)
        parts += [rates] if rates else []
        return " · ".join(parts) + " · tokend starting"
    return remembered_line(given, segments) or "tokend: starting"


def _newest_records(path: str) -> Iterator[dict[str, Any]]:
    """The records in the rollout's last TAIL_BYTES, newest first (none when unreadable)."""
    for line in reversed(tail_lines(path, TAIL_BYTES) or []):
        if b'"token_count"' not in line and b'"turn_context"' not in line:
            continue
        try:
            record = rendezvous.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(record, dict):
            yield record
