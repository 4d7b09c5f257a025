"""The daemon feature on the wire (protocol.md): daemon/status. `host` and `connections` are
what the connection's host reports (lsp.host.HostStatus: shaped by the daemon or the standalone
server); `host` is sent first, as the object's own keys (its `busy`, left out under
--standalone, stays before `connections`)."""

from __future__ import annotations

import attrs

from tokend.lsp.host import HostConnection, HostStatus
from tokend.lsp.wire.common import FLATTEN, omitted


@attrs.frozen
class HostConnectionWire:
    id: str
    client_name: str | None
    session_id: str | None
    peer: str | None = omitted()  # "unix" or "tcp"; none under --standalone


@attrs.frozen
class HostWire:
    pid: int
    uptime_seconds: float
    busy: int | None = omitted()  # writes and compactions in flight; none under --standalone


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
    host: HostWire = attrs.field(kw_only=True, metadata=FLATTEN)
    connections: list[HostConnectionWire]
    version: str
    sessions: list[LoadedSessionWire]
    workspaces: list[str]
    rate: DaemonRateWire | None = omitted()  # when `[rate] tpm_limit` is set


def to_wire_host(status: HostStatus) -> HostWire:
    """The host's process part of daemon/status (uptime in seconds, as the host rounded it)."""
    return HostWire(status.pid, status.uptime_seconds, busy=status.busy)


def to_wire_connection(c: HostConnection) -> HostConnectionWire:
    return HostConnectionWire(c.id, c.client_name, c.session_id, peer=c.peer)
