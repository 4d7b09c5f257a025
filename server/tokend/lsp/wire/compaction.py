"""The compaction feature on the wire (protocol.md): session/compact, the session/didCompact
notification and session/summarize (the server's request to a client that summarizes with its
own model). Figures in tokens."""

from __future__ import annotations

from typing import Literal

import attrs

from tokend.lsp.wire.budget import SnapshotWire
from tokend.lsp.wire.common import ProgressToken, omitted


@attrs.frozen
class SessionCompactParams:
    session_id: str
    strategy: Literal["auto", "prune", "summarize", "full"] = "auto"
    from_message_id: str | None = None  # the first message kept verbatim (summarize)
    instructions: str | None = None  # steer the summary (kept in it, verbatim)
    work_done_token: ProgressToken | None = None


@attrs.frozen
class CompactActionWire:
    kind: str
    parts: int
    tokens_freed: int
    detail: str
    message_id: str | None = omitted()  # the summary message (summarize, full)


@attrs.frozen
class CompactResult:
    before: int
    after: int
    actions: list[CompactActionWire]
    snapshot: SnapshotWire


@attrs.frozen
class SessionDidCompactParams:
    """session/didCompact: a compaction another connection (or an automatic one) made."""

    session_id: str
    before: int
    after: int
    automatic: bool
    actions: list[CompactActionWire]


@attrs.frozen
class SessionSummarizeParams:
    """session/summarize, from the server to the client: it answers {summary}."""

    session_id: str
    prompt: str
    max_tokens: int
