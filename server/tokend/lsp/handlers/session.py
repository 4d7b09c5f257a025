"""The session feature: session/create, /append, /list, /attach, /detach, /messages, /rewind,
/fork, /handoff, /delete, /restore, /rename (soft delete: nothing leaves the store), /reload
(read a session again after another process wrote it, e.g. `tokend import`) and toolOutput/read.
(session/compact is the compaction feature's: handlers/compaction.py.)"""

from __future__ import annotations

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import InvalidParams
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
from tokend.lsp.handler_table import features
from tokend.lsp.handlers.compaction import announce_compaction
from tokend.lsp.progress import auto_progress
from tokend.lsp.results import to_wire_handoff, to_wire_restored, to_wire_session_ref
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import SessionIdParams
from tokend.lsp.wire.budget import SnapshotWire
from tokend.lsp.wire.message import to_wire_message
from tokend.lsp.wire.session import (
    SessionAppendParams,
    SessionAppendResult,
    SessionCreateParams,
    SessionCreateResult,
    SessionForkParams,
    SessionForkResult,
    SessionHandoffParams,
    SessionHandoffResult,
    SessionListParams,
    SessionListResult,
    SessionMessagesParams,
    SessionMessagesResult,
    SessionRefResult,
    SessionRenameParams,
    SessionRewindParams,
    SessionRewindResult,
    ToolOutputReadParams,
    ToolOutputReadResult,
)
from tokend.service.checkpoints.views import restore_code, rewind_both
from tokend.service.compaction.auto_compaction import append_message
from tokend.service.session import admin, history
from tokend.service.session.handoff import handoff as hand_off


def create(ls: TokendServer, params: SessionCreateParams) -> SessionCreateResult:
    p = params
    info = ls.service.sessions.create_session(
        p.model, title=p.title, workspace_uri=p.workspace_uri, context_window=p.context_window
    )
    return SessionCreateResult(info.id, ls.attach(info.id).version)


async def append(ls: TokendServer, params: SessionAppendParams) -> SessionAppendResult:
    p, message = params, params.message
    role = from_wire_role(message.role)
    parts = [from_wire_part(raw, i) for i, raw in enumerate(message.parts)]
    parts = with_iterations(role, parts, message.usage)
    ls.watch(p.session_id)
    with ls.host.busy():
        outcome = await append_message(
            ls.service,
            p.session_id,
            role,
            parts,
            usage=from_wire_usage(message.usage),
            model=message.model,
            if_version=p.if_version,
            ask_client=ask_client(ls),
            duration_ms=message.duration_ms,
            progress=auto_progress(ls),
            message_id=message.id,
        )
    if outcome.auto is not None:
        announce_compaction(ls, p.session_id, outcome.auto, everyone=True)
    # never silent: what the model will see instead of the whole output
    gated = [to_wire_gated(g) for g in outcome.gated] or None
    return SessionAppendResult(outcome.message_id, outcome.version, outcome.tokens, gated=gated)


def list_sessions(ls: TokendServer, params: SessionListParams) -> SessionListResult:
    if params.all and params.workspace_uri is not None:
        raise InvalidParams("session/list takes workspaceUri or all, not both")
    # Scoped: the connection's workspace unless the caller names one or asks for all.
    workspace = None if params.all else (params.workspace_uri or ls.workspace_uri)
    gauges = ls.service.sessions.session_gauges(workspace)
    return SessionListResult([to_wire_session_summary(info, gauge) for info, gauge in gauges])


def attach(ls: TokendServer, params: SessionIdParams) -> SnapshotWire:
    return to_wire_snapshot(ls.attach(params.session_id))


def detach(ls: TokendServer, params: SessionIdParams) -> None:
    ls.detach(params.session_id)


def messages(ls: TokendServer, params: SessionMessagesParams) -> SessionMessagesResult:
    found = history.session_messages(ls.service, params.session_id, params.include_compacted)
    tokens = ls.service.sessions.state(params.session_id).data.message_tokens
    return SessionMessagesResult([to_wire_message(m, tokens.get(m.id)) for m in found])


async def rewind(ls: TokendServer, params: SessionRewindParams) -> SessionRewindResult:
    p = params
    ls.watch(p.session_id)
    code = None
    with ls.host.busy():
        if p.restore == "both" and not p.dry_run:  # all or nothing: see rewind_both
            restored, done = await rewind_both(
                ls.app.checkpoints, p.session_id, p.to_message_id, p.if_version, p.force
            )
            code = to_wire_restored(restored)
            removed, snapshot = done.removed, done.snapshot
        else:
            if p.restore in ("code", "both"):  # the files first: a refusal is listed
                restored = await restore_code(
                    ls.app.checkpoints, p.session_id, p.to_message_id, p.dry_run, p.force
                )
                code = to_wire_restored(restored)
            removed, snapshot = await _rewind_conversation(ls, p)
    return SessionRewindResult(
        code=code, removed=removed, version=snapshot.version, snapshot=to_wire_snapshot(snapshot)
    )


async def _rewind_conversation(
    ls: TokendServer, p: SessionRewindParams
) -> tuple[int, BudgetSnapshot]:
    if p.restore == "conversation" and not p.dry_run:
        done = await history.rewind(ls.service, p.session_id, p.to_message_id, p.if_version)
        return done.removed, done.snapshot
    removed = 0
    if p.restore in ("conversation", "both"):
        removed = history.messages_after(ls.service, p.session_id, p.to_message_id)
    return removed, ls.service.sessions.snapshot(p.session_id)


def fork(ls: TokendServer, params: SessionForkParams) -> SessionForkResult:
    child, copied = history.fork(ls.service, params.session_id, params.at_message_id, params.title)
    snapshot = ls.attach(child.id)
    return SessionForkResult(child.id, params.session_id, copied, snapshot.version)


async def handoff(ls: TokendServer, params: SessionHandoffParams) -> SessionHandoffResult:
    """A new child session for a goal, starting from the parent's context."""
    with ls.host.busy():
        done = await hand_off(ls.service, params.session_id, params.goal)
    ls.attach(done.child.id)
    return to_wire_handoff(done)


def delete(ls: TokendServer, params: SessionIdParams) -> SessionRefResult:
    return to_wire_session_ref(admin.delete_session(ls.service, params.session_id))


def restore(ls: TokendServer, params: SessionIdParams) -> SessionRefResult:
    return to_wire_session_ref(admin.restore_session(ls.service, params.session_id))


def rename(ls: TokendServer, params: SessionRenameParams) -> SessionRefResult:
    return to_wire_session_ref(admin.rename_session(ls.service, params.session_id, params.title))


def reload(ls: TokendServer, params: SessionIdParams) -> SnapshotWire:
    return to_wire_snapshot(admin.reload_session(ls.service, params.session_id))


def read_output(ls: TokendServer, params: ToolOutputReadParams) -> ToolOutputReadResult:
    p = params
    got = history.read_tool_output(ls.service, p.session_id, p.ref, p.offset, p.length)
    eof = got.offset + len(got.text) >= got.total_chars
    return ToolOutputReadResult(got.ref, got.text, got.offset, got.total_chars, eof)


FEATURES = features(
    {
        "session/create": create,
        "session/append": append,
        "session/list": list_sessions,
        "session/attach": attach,
        "session/detach": detach,
        "session/messages": messages,
        "session/rewind": rewind,
        "session/fork": fork,
        "session/handoff": handoff,
        "session/delete": delete,
        "session/restore": restore,
        "session/rename": rename,
        "session/reload": reload,
        "toolOutput/read": read_output,
    }
)
