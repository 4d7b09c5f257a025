"""session/create, session/append, session/list, session/compact."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from tokend.core.errors import InvalidParams
from tokend.lsp import wire
from tokend.lsp.convert import (
    from_wire_part,
    from_wire_role,
    from_wire_usage,
    to_wire_session_summary,
    to_wire_snapshot,
)
from tokend.lsp.server import TokendServer, rpc
from tokend.service.compaction import CompactOutcome, append_message, compact


def register(server: TokendServer) -> None:
    @server.feature("session/create")
    @rpc
    def create(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionCreateParams, params)
        info = ls.service.create_session(
            p.model, title=p.title, workspace_uri=p.workspace_uri, context_window=p.context_window
        )
        snapshot = ls.attach(info.id)
        return wire.to_wire(wire.SessionCreateResult(info.id, snapshot.version))

    @server.feature("session/append")
    @rpc
    async def append(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionAppendParams, params)
        role = from_wire_role(p.message.role)
        parts = [from_wire_part(raw, i) for i, raw in enumerate(p.message.parts)]
        usage = from_wire_usage(p.message.usage)
        ls.watch(p.session_id)
        with ls.host.busy():
            outcome = await append_message(
                ls.service,
                p.session_id,
                role,
                parts,
                usage=usage,
                model=p.message.model,
                if_version=p.if_version,
            )
        if outcome.auto is not None:
            _announce(ls, p.session_id, outcome.auto, everyone=True)
        result = wire.SessionAppendResult(
            outcome.message_id, outcome.snapshot.version, outcome.tokens
        )
        return wire.to_wire(result)

    @server.feature("session/list")
    @rpc
    def list_sessions(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionListParams, params)
        items = [
            to_wire_session_summary(info, gauge)
            for info, gauge in ls.service.session_gauges(p.workspace_uri)
        ]
        return {"sessions": wire.to_wire(items)}

    @server.feature("session/attach")
    @rpc
    def attach(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionIdParams, params)
        return wire.to_wire(to_wire_snapshot(ls.attach(p.session_id)))

    @server.feature("session/detach")
    @rpc
    def detach(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionIdParams, params)
        ls.detach(p.session_id)
        return None

    @server.feature("session/compact")
    @rpc
    def compact_session(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionCompactParams, params)
        ls.watch(p.session_id)
        token = p.work_done_token
        if token is not None and not isinstance(token, int | str):
            raise InvalidParams("workDoneToken must be an integer or a string")
        if token is not None:
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="tokend: compacting the session")
            )
        with ls.host.busy():
            result = compact(ls.service, p.session_id, p.strategy)
        actions = [
            wire.CompactActionWire(a.kind, a.parts, a.tokens_freed, a.detail)
            for a in result.actions
        ]
        done = f"{result.before:,} -> {result.after:,} tokens"
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=done))
        _announce(ls, p.session_id, result, everyone=False)
        snapshot = to_wire_snapshot(result.snapshot)
        return wire.to_wire(wire.CompactResult(result.before, result.after, actions, snapshot))


def _announce(ls: TokendServer, session_id: str, result: CompactOutcome, *, everyone: bool) -> None:
    """session/didCompact to the session's other connections (and this one for an automatic one)."""
    params = {
        "sessionId": session_id,
        "before": result.before,
        "after": result.after,
        "automatic": everyone,
        "actions": [
            {"kind": a.kind, "parts": a.parts, "tokensFreed": a.tokens_freed, "detail": a.detail}
            for a in result.actions
        ],
    }
    ls.host.notify_others("session/didCompact", params, session_id)
    if everyone:
        ls.protocol.notify("session/didCompact", params)
