"""The budget feature: budget/snapshot (budget/didChange is sent by the connection's server,
lsp/server.py, for every session it watches)."""

from __future__ import annotations

from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.handler_table import features
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import SessionIdParams
from tokend.lsp.wire.budget import SnapshotWire


def snapshot(ls: TokendServer, params: SessionIdParams) -> SnapshotWire:
    ls.watch(params.session_id)
    return to_wire_snapshot(ls.service.sessions.snapshot(params.session_id))


FEATURES = features({"budget/snapshot": snapshot})
