"""session/handoff: a new child session for a goal, starting from the parent's context."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.lsp import wire
from tokend.lsp.server import TokendServer, rpc
from tokend.service.handoff import HandedOff, handoff


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


def to_wire_handoff(done: HandedOff) -> dict[str, Any]:
    """The session/handoff result (`tokens` in tokens; `reason` only for a file left out)."""
    files = [
        {"path": f.path, "tokens": f.tokens, "included": f.included}
        | ({} if f.reason is None else {"reason": f.reason})
        for f in done.files
    ]
    return {
        "sessionId": done.child.id,
        "parentId": done.child.parent_id,
        "messageId": done.message_id,
        "tokens": done.tokens,
        "files": files,
        "version": done.snapshot.version,
    }
