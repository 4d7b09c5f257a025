"""session/create, session/append, session/list, session/attach, session/detach, session/compact."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from tokend.core.errors import InvalidParams
from tokend.lsp import wire
from tokend.lsp.ask_client import ask_client
from tokend.lsp.convert import (
    from_wire_part,
    from_wire_role,
    from_wire_usage,
    to_wire_gated,
    to_wire_session_summary,
    to_wire_snapshot,
)
from tokend.lsp.server import TokendServer, rpc
from tokend.service.compaction import (
    CompactAction,
    CompactOutcome,
    CompactRequest,
    append_message,
    compact_async,
)


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
                ask_client=ask_client(ls),
                duration_ms=p.message.duration_ms,
            )
        if outcome.auto is not None:
            announce_compaction(ls, p.session_id, outcome.auto, everyone=True)
        result = wire.to_wire(
            wire.SessionAppendResult(outcome.message_id, outcome.snapshot.version, outcome.tokens)
        )
        if outcome.gated:  # never silent: what the model will see instead of the whole output
            result["gated"] = wire.to_wire([to_wire_gated(g) for g in outcome.gated])
        return result

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
    async def compact_session(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionCompactParams, params)
        ls.watch(p.session_id)
        token = p.work_done_token
        if token is not None and not isinstance(token, int | str):
            raise InvalidParams("workDoneToken must be an integer or a string")
        if token is not None:
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="tokend: compacting the session")
            )
        request = CompactRequest(
            p.strategy, p.from_message_id, p.instructions, ask_client=ask_client(ls)
        )
        done = "failed"
        try:
            with ls.host.busy():
                result = await compact_async(ls.service, p.session_id, request)
            done = f"{result.before:,} -> {result.after:,} tokens"
        finally:
            if token is not None:
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=done))
        announce_compaction(ls, p.session_id, result, everyone=False)
        snapshot = to_wire_snapshot(result.snapshot)
        return {
            "before": result.before,
            "after": result.after,
            "actions": [_action(a) for a in result.actions],
            "snapshot": wire.to_wire(snapshot),
        }


def _action(action: CompactAction) -> dict[str, Any]:
    """A compaction action on the wire (tokensFreed in tokens; messageId only for a summary)."""
    out: dict[str, Any] = wire.to_wire(
        wire.CompactActionWire(action.kind, action.parts, action.tokens_freed, action.detail)
    )
    out.pop("messageId")
    if action.message_id is not None:
        out["messageId"] = action.message_id
    return out


def announce_compaction(
    ls: TokendServer, session_id: str, result: CompactOutcome, *, everyone: bool
) -> None:
    """session/didCompact to the session's other connections (and this one for an automatic one)."""
    params = {
        "sessionId": session_id,
        "before": result.before,
        "after": result.after,
        "automatic": everyone,
        "actions": [_action(a) for a in result.actions],
    }
    ls.host.notify_others("session/didCompact", params, session_id)
    if everyone:
        ls.protocol.notify("session/didCompact", params)
