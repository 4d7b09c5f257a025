"""`[statusline]`: what `tokend statusline` shows when the command names no segments (the daemon
renders the line, so the command never reads the config: core.statusline.segments). `[status]`: whether
`tokend status` starts the daemon in the background when it finds none (commands/status_start.py
reads the key from the user's file itself, without these modules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from tokend.core.config_rules import Check
from tokend.core.statusline.segments import SEGMENTS

_SEGMENT_NAMES = Check(
    lambda v: bool(v) and all(name in SEGMENTS for name in v),
    f"a list of segment names, in order: {', '.join(SEGMENTS)}",
)


@dataclass(frozen=True, slots=True)
class StatuslineConfig:
    segments: Annotated[tuple[str, ...], _SEGMENT_NAMES] = SEGMENTS


@dataclass(frozen=True, slots=True)
class StatusConfig:
    start_daemon: bool = True
