"""The compaction feature: session/compact (cancellable, with the client's work-done token), and
session/didCompact to the session's other connections (and this one, for an automatic
compaction an append or an assemble started)."""

from __future__ import annotations

import asyncio
from typing import cast

from lsprotocol.types import ProgressToken

from tokend.core.errors import InvalidParams
from tokend.lsp import wire
from tokend.lsp.ask_client import ask_client
from tokend.lsp.handler_table import features
from tokend.lsp.progress import begin_cancellable, end_progress
from tokend.lsp.results import to_wire_compact_action, to_wire_compact_result
from tokend.lsp.server import TokendServer
from tokend.lsp.wire.compaction import CompactResult, SessionCompactParams, SessionDidCompactParams
from tokend.service.compaction.tiers import CompactOutcome, CompactRequest, compact_async

SESSION_DID_COMPACT = "session/didCompact"


async def compact(ls: TokendServer, params: SessionCompactParams) -> CompactResult:
    p = params
    if (refused := ls.app.followers.compaction_refused(p.session_id)) is not None:
        raise InvalidParams(refused)  # the agent's context: the gauge must not move
    ls.watch(p.session_id)
    token = cast("ProgressToken | None", p.work_done_token)  # a string or an integer
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
    return to_wire_compact_result(result)


def announce_compaction(
    ls: TokendServer, session_id: str, result: CompactOutcome, *, everyone: bool
) -> None:
    """session/didCompact to the session's other connections (and this one for an automatic one)."""
    actions = [to_wire_compact_action(a) for a in result.actions]
    notice = SessionDidCompactParams(session_id, result.before, result.after, everyone, actions)
    params = wire.to_wire(notice)
    ls.host.notify_others(SESSION_DID_COMPACT, params, session_id)
    if everyone:
        ls.protocol.notify(SESSION_DID_COMPACT, params)


FEATURES = features({"session/compact": compact})
