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
    """`value` as JSON (strings quoted), cut to about `limit` characters: a long one keeps its
    head and says how long it was, e.g. `"aaaa…" (8,388,608 chars)`. Lone surrogates and
    control characters are shown escaped, never raw."""
    if isinstance(value, str):
        head = value[: max(limit - 32, 8)]
        text = json.dumps(head)
        if len(value) <= len(head):
            return text
        return f'{text[:-1]}…" ({len(value):,} chars)'
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
