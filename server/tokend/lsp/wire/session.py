"""The session feature on the wire (protocol.md): session/create, /append, /list, /attach,
/detach, /messages, /rewind, /fork, /handoff, /delete, /restore, /rename, /reload and
toolOutput/read. Times are ISO 8601 (UTC); sizes of text in characters."""

from __future__ import annotations

from typing import Literal

import attrs

from tokend.lsp.wire.budget import SnapshotWire
from tokend.lsp.wire.checkpoints import RestoredWire
from tokend.lsp.wire.common import OMIT, omitted
from tokend.lsp.wire.message import MessageParams, MessageWire

# -- params -----------------------------------------------------------------------------------


@attrs.frozen
class SessionCreateParams:
    model: str
    title: str | None = None
    workspace_uri: str | None = None
    context_window: int | None = None


@attrs.frozen
class SessionAppendParams:
    session_id: str
    message: MessageParams
    if_version: int | None = None


@attrs.frozen
class SessionListParams:
    workspace_uri: str | None = None
    all: bool = False


@attrs.frozen
class SessionMessagesParams:
    session_id: str
    include_compacted: bool = False


@attrs.frozen
class SessionRewindParams:
    session_id: str
    to_message_id: str
    if_version: int | None = None
    restore: Literal["conversation", "code", "both"] = "conversation"
    dry_run: bool = False
    force: bool = False


@attrs.frozen
class SessionForkParams:
    session_id: str
    at_message_id: str | None = None
    title: str | None = None


@attrs.frozen
class SessionHandoffParams:
    session_id: str
    goal: str


@attrs.frozen
class SessionRenameParams:
    session_id: str
    title: str


@attrs.frozen
class ToolOutputReadParams:
    session_id: str
    ref: str
    offset: int = 0  # characters
    length: int = 50_000  # characters


# -- results ----------------------------------------------------------------------------------


@attrs.frozen
class SessionCreateResult:
    session_id: str
    version: int


@attrs.frozen
class GatedOutputWire:
    """A tool result a gate kept out of a message (sizes in characters)."""

    part_index: int
    call_id: str
    name: str
    gate: str  # "preview" | "middleOut"
    ref: str
    original_chars: int
    shown_chars: int


@attrs.frozen
class SessionAppendResult:
    message_id: str
    version: int
    tokens: int
    gated: list[GatedOutputWire] | None = omitted()  # never silent, sent when a gate kept output


@attrs.frozen
class SessionSummaryWire:
    session_id: str
    model: str
    title: str | None
    workspace_uri: str | None
    created_at: str
    updated_at: str
    used_tokens: int
    used_percentage: float
    context_window: int
    estimated: bool


@attrs.frozen
class SessionListResult:
    sessions: list[SessionSummaryWire]


@attrs.frozen
class SessionMessagesResult:
    messages: list[MessageWire]


@attrs.frozen
class SessionRewindResult:
    # restore "code" or "both": what the files did
    code: RestoredWire | None = attrs.field(default=None, kw_only=True, metadata=OMIT)
    removed: int  # messages taken out of the live context (or that would be, dryRun)
    version: int
    snapshot: SnapshotWire


@attrs.frozen
class SessionForkResult:
    session_id: str
    parent_id: str
    messages: int  # messages copied into the child
    version: int


@attrs.frozen
class HandoffFileWire:
    path: str
    tokens: int
    included: bool
    reason: str | None = omitted()  # only for a file left out


@attrs.frozen
class SessionHandoffResult:
    session_id: str
    parent_id: str | None
    message_id: str
    tokens: int
    files: list[HandoffFileWire]
    version: int


@attrs.frozen
class SessionRefResult:
    """The session after the change; deletedAt null when live."""

    session_id: str
    title: str | None
    workspace_uri: str | None
    updated_at: str
    deleted_at: str | None


@attrs.frozen
class ToolOutputReadResult:
    ref: str
    text: str
    offset: int  # characters
    total_chars: int
    eof: bool
