"""session/messages, session/rewind, session/fork, toolOutput/read (the last two typed handlers:
lsp.handler_table)."""

from __future__ import annotations

from typing import Any

from tokend.lsp import wire
from tokend.lsp.convert import to_wire_message, to_wire_snapshot
from tokend.lsp.handler_table import features, register_features
from tokend.lsp.results import to_wire_restored
from tokend.lsp.server import TokendServer, rpc
from tokend.lsp.wire_history import SessionForkResult, ToolOutputReadResult
from tokend.service import history
from tokend.service.checkpoint_views import restore_code, rewind_both


def register(server: TokendServer) -> None:
    register_features(server, FEATURES)

    @server.feature("session/messages")
    @rpc
    def messages(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionMessagesParams, params)
        found = history.session_messages(ls.service, p.session_id, p.include_compacted)
        tokens = ls.service.sessions.state(p.session_id).data.message_tokens
        return {"messages": [to_wire_message(m, tokens.get(m.id)) for m in found]}

    @server.feature("session/rewind")
    @rpc
    async def rewind(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionRewindParams, params)
        ls.watch(p.session_id)
        result: dict[str, Any] = {}
        with ls.host.busy():
            if p.restore == "both" and not p.dry_run:  # all or nothing: see rewind_both
                restored, done = await rewind_both(
                    ls.app.checkpoints, p.session_id, p.to_message_id, p.if_version, p.force
                )
                result["code"] = to_wire_restored(restored)
                removed, snapshot = done.removed, done.snapshot
            else:
                if p.restore in ("code", "both"):  # the files first: a refusal is listed
                    restored = await restore_code(
                        ls.app.checkpoints, p.session_id, p.to_message_id, p.dry_run, p.force
                    )
                    result["code"] = to_wire_restored(restored)
                removed, snapshot = await _conversation(ls, p)
        result.update(
            removed=removed,
            version=snapshot.version,
            snapshot=wire.to_wire(to_wire_snapshot(snapshot)),
        )
        return result

    async def _conversation(ls: TokendServer, p: wire.SessionRewindParams) -> tuple[int, Any]:
        if p.restore == "conversation" and not p.dry_run:
            done = await history.rewind(ls.service, p.session_id, p.to_message_id, p.if_version)
            return done.removed, done.snapshot
        removed = 0
        if p.restore in ("conversation", "both"):
            removed = history.messages_after(ls.service, p.session_id, p.to_message_id)
        return removed, ls.service.sessions.snapshot(p.session_id)


def fork(ls: TokendServer, params: wire.SessionForkParams) -> SessionForkResult:
    child, copied = history.fork(ls.service, params.session_id, params.at_message_id, params.title)
    snapshot = ls.attach(child.id)
    return SessionForkResult(child.id, params.session_id, copied, snapshot.version)


def read_output(ls: TokendServer, params: wire.ToolOutputReadParams) -> ToolOutputReadResult:
    p = params
    got = history.read_tool_output(ls.service, p.session_id, p.ref, p.offset, p.length)
    eof = got.offset + len(got.text) >= got.total_chars
    return ToolOutputReadResult(got.ref, got.text, got.offset, got.total_chars, eof)


FEATURES = features({"session/fork": fork, "toolOutput/read": read_output})
