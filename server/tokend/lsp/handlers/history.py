"""session/messages, session/rewind, session/fork, toolOutput/read."""

from __future__ import annotations

from typing import Any

from tokend.lsp import wire
from tokend.lsp.convert import to_wire_message, to_wire_snapshot
from tokend.lsp.results import to_wire_restored
from tokend.lsp.server import TokendServer, rpc
from tokend.service import history
from tokend.service.checkpoint_views import restore_code, rewind_both


def register(server: TokendServer) -> None:
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

    @server.feature("session/fork")
    @rpc
    def fork(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionForkParams, params)
        child, copied = history.fork(ls.service, p.session_id, p.at_message_id, p.title)
        snapshot = ls.attach(child.id)
        return {
            "sessionId": child.id,
            "parentId": p.session_id,
            "messages": copied,
            "version": snapshot.version,
        }

    @server.feature("toolOutput/read")
    @rpc
    def read_output(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.ToolOutputReadParams, params)
        got = history.read_tool_output(ls.service, p.session_id, p.ref, p.offset, p.length)
        return {
            "ref": got.ref,
            "text": got.text,
            "offset": got.offset,
            "totalChars": got.total_chars,
            "eof": got.offset + len(got.text) >= got.total_chars,
        }
