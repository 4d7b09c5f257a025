"""The statusline feature on the wire (protocol.md): statusline/line."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.core.errors import InvalidParams


@attrs.frozen
class StatuslineParams:
    given: dict[str, Any]  # the JSON object Claude Code (or Codex) passes on stdin
    segments: list[str] | None = None
    colour: bool = False
    agent: str = "claude-code"  # or "codex": given.transcript_path a rollout, or none (the newest)

    @staticmethod
    def check_raw(params: Any) -> None:
        """What protocol.md says of `given` and `agent`, checked on the params as sent."""
        if not isinstance(params, dict):
            return
        if not isinstance(params.get("given"), dict):
            raise InvalidParams("given: must be the JSON object Claude Code passes on stdin")
        if params.get("agent", "claude-code") not in ("claude-code", "codex"):
            raise InvalidParams("agent: claude-code (the default) or codex")


@attrs.frozen
class StatuslineLineResult:
    line: str | None  # null unless state is "current"
    state: str  # "current" | "reading" (a first read, partial figures) | "waiting" (no reply)
    session_id: str | None
