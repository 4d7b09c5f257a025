"""session/handoff: a new child session for a goal, starting from the parent's context."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.lsp import wire
from tokend.lsp.results import to_wire_handoff
from tokend.lsp.server import TokendServer, rpc
from tokend.service.handoff import handoff


@attrs.frozen
class SessionHandoffParams:
    session_id: str
    goal: str


def register(server: TokendServer) -> None:
    @server.feature("session/handoff")
    @rpc
    async def session_handoff(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(SessionHandoffParams, params)
        with ls.host.busy():
            done = await handoff(ls.service, p.session_id, p.goal)
        ls.attach(done.child.id)
        return to_wire_handoff(done)
