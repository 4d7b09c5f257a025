"""`[statusline]`: what `tokend statusline` shows when the command names no segments (the daemon
renders the line, so the command never reads the config: core.statusline)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from tokend.core.config_rules import Check
from tokend.core.statusline import SEGMENTS

_SEGMENT_NAMES = Check(
    lambda v: bool(v) and all(name in SEGMENTS for name in v),
    f"a list of segment names, in order: {', '.join(SEGMENTS)}",
)


@dataclass(frozen=True, slots=True)
class StatuslineConfig:
    segments: Annotated[tuple[str, ...], _SEGMENT_NAMES] = SEGMENTS
