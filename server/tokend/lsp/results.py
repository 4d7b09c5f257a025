"""Results the CLI prints as the handlers answer them: domain values to their wire shape
(protocol.md), shared by lsp/handlers and the commands that work without a daemon (commands
never import handlers). Times are ISO 8601 (UTC); line and token counts as named."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs

from tokend.core.types import SessionInfo

if TYPE_CHECKING:  # annotations only: `tokend sessions` must not import the checkpointer
    from tokend.service.checkpoint_views import FileView, Restored, TurnView
    from tokend.service.handoff import HandedOff
    from tokend.service.restore_journal import Interrupted


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


def to_wire_interrupted(i: Interrupted) -> dict[str, Any]:
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


@attrs.frozen
class SessionRefResult:
    """The session after the change; times are ISO 8601 (UTC), deletedAt null when live."""

    session_id: str
    title: str | None
    workspace_uri: str | None
    updated_at: str
    deleted_at: str | None


def to_wire_session_ref(info: SessionInfo) -> SessionRefResult:
    deleted_at = info.deleted_at.isoformat() if info.deleted_at is not None else None
    return SessionRefResult(
        info.id, info.title, info.workspace_uri, info.updated_at.isoformat(), deleted_at
    )


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
