"""checkpoint/list, checkpoint/diff, checkpoint/restore: what each turn changed, and undoing it.

Registering this module starts the service's checkpointer (`checkpoints_of`), so every
connection's sessions are checkpointed from the daemon's first connection on.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from tokend.lsp import wire
from tokend.service import restore_journal
from tokend.service.checkpoint_views import (
    FileView,
    Restored,
    TurnView,
    diff_async,
    list_async,
    restore_code,
    watching,
)
from tokend.service.checkpoints import checkpoints_of

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer


@attrs.frozen
class CheckpointListParams:
    session_id: str


@attrs.frozen
class CheckpointDiffParams:
    session_id: str
    message_id: str
    path: str | None = None


@attrs.frozen
class CheckpointRestoreParams:
    session_id: str
    to_message_id: str
    dry_run: bool = False
    force: bool = False


def _time(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat()


def to_wire_file(f: FileView) -> dict[str, Any]:
    """One file of a turn; `added`/`removed` are lines (null: binary or not saved)."""
    item: dict[str, Any] = {"path": f.path, "kind": f.kind, "added": f.added}
    item.update(removed=f.removed, origin=f.origin)
    if f.moved_from:
        item["movedFrom"] = f.moved_from
    return item


def to_wire_turn(t: TurnView) -> dict[str, Any]:
    return {
        "messageId": t.message_id,
        "startedAt": _time(t.started_at),
        "endedAt": _time(t.ended_at),
        "files": [to_wire_file(f) for f in t.files],
        "outside": [to_wire_file(f) for f in t.outside],
        "warnings": list(t.warnings),
    }


def to_wire_restored(r: Restored) -> dict[str, Any]:
    files = []
    for step in r.steps:
        item: dict[str, Any] = {"path": step.path, "action": step.action}
        if step.reason:
            item["reason"] = step.reason
        if step.moved_back_from:
            item["movedBackFrom"] = step.moved_back_from
        files.append(item)
    kept = sum(1 for s in r.steps if s.action in ("kept", "unavailable"))
    return {
        "toMessageId": r.to_message_id,
        "dryRun": r.dry_run,
        "files": files,
        "outside": list(r.outside),
        "restored": len(r.steps) - kept,
        "kept": kept,
    }


def to_wire_interrupted(i: restore_journal.Interrupted) -> dict[str, Any]:
    """A restore a kill interrupted, as the restart settled it."""
    out = i.outcome
    item: dict[str, Any] = {
        "toMessageId": i.to_message_id,
        "startedAt": _time(i.started_at),
        "restore": "both" if i.both else "code",
        "finished": out.get("finished", 0),
        "alreadyDone": out.get("alreadyDone", 0),
        "kept": out.get("kept", []),
        "temporariesRemoved": out.get("temporariesRemoved", 0),
    }
    for key in ("conversation", "error"):
        if key in out:
            item[key] = out[key]
    return item


def _tell(server: TokendServer, text: str) -> None:
    server.window_log_message(types.LogMessageParams(types.MessageType.Warning, text))


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    restore_journal.listen(checkpoints_of(server.service), server, _tell)

    @server.feature("checkpoint/list")
    @rpc
    async def list_checkpoints(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(CheckpointListParams, params)
        turns = await list_async(ls.service, p.session_id)
        settled = restore_journal.interrupted(checkpoints_of(ls.service), p.session_id)
        return {
            "watching": watching(ls.service, p.session_id),
            "turns": [to_wire_turn(t) for t in turns],
            "interrupted": [to_wire_interrupted(i) for i in settled],
        }

    @server.feature("checkpoint/diff")
    @rpc
    async def diff(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(CheckpointDiffParams, params)
        return {"diff": await diff_async(ls.service, p.session_id, p.message_id, p.path)}

    @server.feature("checkpoint/restore")
    @rpc
    async def restore(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(CheckpointRestoreParams, params)
        with ls.host.busy():
            done = await restore_code(ls.service, p.session_id, p.to_message_id, p.dry_run, p.force)
        return to_wire_restored(done)
