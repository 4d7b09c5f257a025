"""The daemon feature: daemon/status: who is connected, which sessions are loaded, which
workspaces (gopls's inspect); the daemon's rate headroom when `[rate] tpm_limit` is set. (Spend
notices: lsp/notices.py.)"""

from __future__ import annotations

from collections import Counter

import tokend
from tokend.lsp.handler_table import features
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import NoParams
from tokend.lsp.wire.daemon import (
    DaemonRateWire,
    DaemonStatusResult,
    LoadedSessionWire,
    to_wire_connection,
    to_wire_host,
)


def status(ls: TokendServer, params: NoParams) -> DaemonStatusResult:
    host = ls.host.status()
    attached = Counter(c.session_id for c in host.connections if c.session_id)
    sessions = [
        LoadedSessionWire(
            s.session_id,
            s.model,
            s.used_tokens,
            s.used_percentage,
            s.version,
            attached[s.session_id],
        )
        for s in ls.service.sessions.loaded_snapshots()
    ]
    rate = ls.app.usage.rate()
    rate_wire = None
    if rate.tpm_limit is not None:
        rate_wire = DaemonRateWire(
            rate.tokens_per_minute, rate.tpm_limit, rate.headroom_tokens, rate.used_percentage
        )
    workspaces = sorted(ls.service.sessions.loaded_workspaces())
    return DaemonStatusResult(
        host=to_wire_host(host),
        connections=[to_wire_connection(c) for c in host.connections],
        version=tokend.__version__,
        sessions=sessions,
        workspaces=workspaces,
        rate=rate_wire,
    )


FEATURES = features({"daemon/status": status})
