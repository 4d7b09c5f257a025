"""budget/snapshot."""

from __future__ import annotations

from typing import Any

from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.server import TokendServer, rpc


def register(server: TokendServer) -> None:
    @server.feature("budget/snapshot")
    @rpc
    def snapshot(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionIdParams, params)
        ls.watch(p.session_id)
        return wire.to_wire(to_wire_snapshot(ls.service.sessions.snapshot(p.session_id)))
