"""budget/snapshot."""

from __future__ import annotations

from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.handler_table import features, register_features
from tokend.lsp.server import TokendServer


def snapshot(ls: TokendServer, params: wire.SessionIdParams) -> wire.SnapshotWire:
    ls.watch(params.session_id)
    return to_wire_snapshot(ls.service.sessions.snapshot(params.session_id))


FEATURES = features({"budget/snapshot": snapshot})


def register(server: TokendServer) -> None:
    register_features(server, FEATURES)
