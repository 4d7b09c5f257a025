"""session/create, session/append, session/list, session/attach, session/detach, session/compact."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from lsprotocol.types import ProgressToken

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
    with_iterations,
)
from tokend.lsp.server import TokendServer, rpc
from tokend.service.auto_compaction import AutoProgress, append_message
from tokend.service.compaction import (
    CompactAction,
    CompactOutcome,
    CompactRequest,
    compact_async,
)

log = logging.getLogger(__name__)

CREATE_WAIT_S = 5.0  # how long an automatic compaction waits for the client to accept a token
_tokens = itertools.count(1)


def register(server: TokendServer) -> None:
    @server.feature("session/create")
    @rpc
    def create(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionCreateParams, params)
        info = ls.service.sessions.create_session(
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
        parts = with_iterations(role, parts, p.message.usage)
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
                progress=auto_progress(ls),
                message_id=p.message.id,
            )
        if outcome.auto is not None:
            announce_compaction(ls, p.session_id, outcome.auto, everyone=True)
        result = wire.to_wire(
            wire.SessionAppendResult(outcome.message_id, outcome.version, outcome.tokens)
        )
        if outcome.gated:  # never silent: what the model will see instead of the whole output
            result["gated"] = wire.to_wire([to_wire_gated(g) for g in outcome.gated])
        return result

    @server.feature("session/list")
    @rpc
    def list_sessions(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(wire.SessionListParams, params)
        if p.all and p.workspace_uri is not None:
            raise InvalidParams("session/list takes workspaceUri or all, not both")
        # Scoped: the connection's workspace unless the caller names one or asks for all.
        workspace = None if p.all else (p.workspace_uri or ls.workspace_uri)
        items = [
            to_wire_session_summary(info, gauge)
            for info, gauge in ls.service.sessions.session_gauges(workspace)
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
        if (refused := ls.app.followers.compaction_refused(p.session_id)) is not None:
            raise InvalidParams(refused)  # the agent's context: the gauge must not move
        ls.watch(p.session_id)
        token = p.work_done_token
        if token is not None and not isinstance(token, int | str):
            raise InvalidParams("workDoneToken must be an integer or a string")
        request = CompactRequest(
            p.strategy, p.from_message_id, p.instructions, ask_client=ask_client(ls)
        )
        task = asyncio.current_task()
        if token is not None and task is not None:
            begin_cancellable(ls, token, "tokend: compacting the session", task.cancel)
        done = "failed"
        try:
            with ls.host.busy():
                result = await compact_async(ls.service, p.session_id, request)
            done = f"{result.before:,} -> {result.after:,} tokens"
        except asyncio.CancelledError:
            done = "cancelled: nothing written"
            raise  # pygls answers RequestCancelled (-32800)
        finally:
            if token is not None:
                end_progress(ls, token, done)
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


def begin_cancellable(
    ls: TokendServer, token: ProgressToken, title: str, cancel: Callable[[], object]
) -> None:
    """$/progress begin with `cancellable: true`; window/workDoneProgress/cancel of `token`
    calls `cancel` (pygls cancels the token's future; its callback does the rest)."""
    progress = ls.work_done_progress
    progress.tokens.pop(token, None)  # a token a client uses again starts afresh
    progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
    progress.tokens[token].add_done_callback(lambda f: cancel() if f.cancelled() else None)


def end_progress(ls: TokendServer, token: ProgressToken, message: str) -> None:
    ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
    ls.work_done_progress.tokens.pop(token, None)


class _AutoProgress:
    """An automatic compaction's $/progress on the connection whose append started it: a
    token the server creates (window/workDoneProgress/create), a cancellable begin, an end."""

    def __init__(self, ls: TokendServer) -> None:
        self._ls = ls
        self._token: str | None = None

    async def begin(self, cancel: Callable[[], object]) -> None:
        token = f"tokend-compact-{next(_tokens)}"
        try:
            created = self._ls.work_done_progress.create_async(token)
            _ = await asyncio.wait_for(created, CREATE_WAIT_S)
        except Exception as error:  # the client refused or did not answer: no progress
            log.info("no progress for an automatic compaction: %r", error)
            return
        self._token = token
        begin_cancellable(self._ls, token, "tokend: compacting the session (automatic)", cancel)

    def end(self, message: str) -> None:
        if self._token is not None:
            end_progress(self._ls, self._token, message)


def auto_progress(ls: TokendServer) -> AutoProgress | None:
    """Progress for an automatic compaction, when the client handles work-done progress."""
    caps = ls.client_capabilities
    window = caps.window if caps is not None else None
    if window is None or not window.work_done_progress:
        return None
    return _AutoProgress(ls)
