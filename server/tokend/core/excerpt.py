"""Short excerpts of values a client sent, for error messages and log lines.

A field can hold megabytes (an 8 MB `sessionId`, a 1 MB `title`): echoing it whole makes a
reply, or a log line, as big. Every value tokend echoes goes through `excerpt`; every message
it sends or logs is bounded by `bounded` (a last line of defence for a value echoed whole).
"""

from __future__ import annotations

import json
from typing import Any

EXCERPT_CHARS = 80
"""The longest excerpt of one value, ellipsis and length note included."""
MESSAGE_CHARS = 2_000
"""The longest error message or log argument; its head and tail are kept."""


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """`value` as JSON (strings quoted, lone surrogates and control characters escaped, never
    raw), in at most `limit` characters (`limit` >= 40): a longer one keeps its head and says
    how long it was, e.g. `"aaaa…" (8,388,608 chars)`."""
    if isinstance(value, str):
        text = json.dumps(value[:limit])
        if len(value) <= limit and len(text) <= limit:
            return text
        note = f" ({len(value):,} chars)"
        return f'{text[: limit - len(note) - 2]}…"{note}'
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def bounded(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` when short; otherwise its head and tail around a note of what was cut (the tail
    of an error message usually says what to do)."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    cut = len(text) - (limit - tail)
    return f"{text[: limit - tail]} […{cut:,} chars cut…] {text[-tail:]}"
