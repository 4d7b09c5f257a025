"""Results the CLI prints as the handlers answer them: domain values to their wire classes
(lsp/wire/<feature>.py, protocol.md), shared by lsp/handlers and the commands that work without
a daemon (commands never import handlers). Times are ISO 8601 (UTC); line and token counts as
named."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tokend.core.types import SessionInfo
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.wire.checkpoints import (
    FileChangeWire,
    InterruptedWire,
    RestoredWire,
    RestoreStepWire,
    TurnWire,
)
from tokend.lsp.wire.compaction import CompactActionWire, CompactResult
from tokend.lsp.wire.session import HandoffFileWire, SessionHandoffResult, SessionRefResult

if TYPE_CHECKING:  # annotations only: `tokend sessions` must not import the checkpointer
    from tokend.service.checkpoints.restore_journal import Interrupted
    from tokend.service.checkpoints.views import FileView, Restored, TurnView
    from tokend.service.compaction.tiers import CompactAction, CompactOutcome
    from tokend.service.session.handoff import HandedOff


def _time(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat()


def to_wire_file(f: FileView) -> FileChangeWire:
    """One file of a turn; `added`/`removed` are lines (null: binary or not saved)."""
    return FileChangeWire(
        f.path, f.kind, f.added, f.removed, f.origin, moved_from=f.moved_from or None
    )


def to_wire_turn(t: TurnView) -> TurnWire:
    return TurnWire(
        t.message_id,
        _time(t.started_at),
        _time(t.ended_at),
        [to_wire_file(f) for f in t.files],
        [to_wire_file(f) for f in t.outside],
        list(t.warnings),
    )


def to_wire_restored(r: Restored) -> RestoredWire:
    files = [
        RestoreStepWire(
            step.path,
            step.action,
            reason=step.reason or None,
            moved_back_from=step.moved_back_from or None,
        )
        for step in r.steps
    ]
    kept = sum(1 for s in r.steps if s.action in ("kept", "unavailable"))
    return RestoredWire(
        r.to_message_id, r.dry_run, files, list(r.outside), len(r.steps) - kept, kept
    )


def to_wire_interrupted(i: Interrupted) -> InterruptedWire:
    """A restore a kill interrupted, as the restart settled it (its journal's outcome)."""
    out = i.outcome
    recorded = {key: out[key] for key in ("conversation", "error") if key in out}
    return InterruptedWire(
        i.to_message_id,
        _time(i.started_at),
        "both" if i.both else "code",
        out.get("finished", 0),
        out.get("alreadyDone", 0),
        out.get("kept", []),
        out.get("temporariesRemoved", 0),
        **recorded,
    )


def to_wire_session_ref(info: SessionInfo) -> SessionRefResult:
    deleted_at = info.deleted_at.isoformat() if info.deleted_at is not None else None
    return SessionRefResult(
        info.id, info.title, info.workspace_uri, info.updated_at.isoformat(), deleted_at
    )


def to_wire_handoff(done: HandedOff) -> SessionHandoffResult:
    """The session/handoff result (`tokens` in tokens; `reason` only for a file left out)."""
    files = [HandoffFileWire(f.path, f.tokens, f.included, reason=f.reason) for f in done.files]
    return SessionHandoffResult(
        done.child.id,
        done.child.parent_id,
        done.message_id,
        done.tokens,
        files,
        done.snapshot.version,
    )


def to_wire_compact_action(action: CompactAction) -> CompactActionWire:
    """A compaction action (tokensFreed in tokens; messageId only for a summary)."""
    return CompactActionWire(
        action.kind, action.parts, action.tokens_freed, action.detail, message_id=action.message_id
    )


def to_wire_compact_result(outcome: CompactOutcome) -> CompactResult:
    """session/compact's result (`tokend compact` prints the same)."""
    actions = [to_wire_compact_action(a) for a in outcome.actions]
    return CompactResult(outcome.before, outcome.after, actions, to_wire_snapshot(outcome.snapshot))
