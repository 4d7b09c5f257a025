"""Wire types of session/fork and toolOutput/read (protocol.md), camelCase on the wire."""

from __future__ import annotations

import attrs


@attrs.frozen
class SessionForkResult:
    session_id: str
    parent_id: str
    messages: int  # messages copied into the child
    version: int


@attrs.frozen
class ToolOutputReadResult:
    ref: str
    text: str
    offset: int  # characters
    total_chars: int
    eof: bool
