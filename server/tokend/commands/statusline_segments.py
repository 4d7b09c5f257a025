"""The status line rendered by the command itself, for a daemon older than `statusline/line`
(which renders it): the segments are core.statusline.segments's; the cache segment's last provider call
is read here from the end of the transcript file."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from tokend.commands.file_tail import tail_lines
from tokend.core.statusline import segments as statusline
from tokend.core.statusline.segments import SEGMENTS, LastCall, parse_segments, rate_text

__all__ = ["SEGMENTS", "cache_text", "last_call", "parse_segments", "rate_text", "render"]

TAIL_BYTES = 256 << 10  # how much of the transcript's end is read for the last provider call


def render(
    snapshot: dict[str, Any],
    given: dict[str, Any],
    segments: Sequence[str] = SEGMENTS,
    *,
    colour: bool = True,
    now: float | None = None,
) -> str:
    now = time.time() if now is None else now
    path = given.get("transcript_path")
    last = last_call(path) if "cache" in segments and isinstance(path, str) else None
    return statusline.render(snapshot, given, segments, colour=colour, now=now, last=last)


def cache_text(path: str, now: float) -> str | None:
    """`cache 3m`, `cache cold` or None (core.statusline.segments.cache_text) for the transcript at
    `path`."""
    return statusline.cache_text(last_call(path), now)


def last_call(path: str) -> LastCall | None:
    """The last provider call in the end of the transcript at `path` (None when unreadable)."""
    lines = tail_lines(path, TAIL_BYTES)
    return None if lines is None else statusline.last_call(_records(reversed(lines)))


def _records(lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if b'"usage"' not in line or b'"assistant"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record
