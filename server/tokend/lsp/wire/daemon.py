"""The daemon feature on the wire (protocol.md): daemon/status. `host` is what the connection's
host reports (pid, uptimeSeconds, busy, connections: shaped by the daemon or the standalone
server), sent first, as the object's own keys."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.lsp.wire.common import FLATTEN, omitted


@attrs.frozen
class LoadedSessionWire:
    session_id: str
    model: str
    used_tokens: int
    used_percentage: float
    version: int
    connections: int  # connections attached to it


@attrs.frozen
class DaemonRateWire:
    tokens_per_minute: int
    tpm_limit: int
    headroom_tokens: int | None
    used_percentage: float | None


@attrs.frozen
class DaemonStatusResult:
    host: dict[str, Any] = attrs.field(factory=dict, kw_only=True, metadata=FLATTEN)
    version: str
    sessions: list[LoadedSessionWire]
    workspaces: list[str]
    rate: DaemonRateWire | None = omitted()  # when `[rate] tpm_limit` is set
