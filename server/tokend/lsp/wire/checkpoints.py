"""The checkpoints feature on the wire (protocol.md): checkpoint/list, /diff, /restore, and the
restore a `session/rewind` with `restore: "code"|"both"` reports. Times are ISO 8601 (UTC);
`added`/`removed` are lines (null: binary or not saved)."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.lsp.wire.common import omitted

ABSENT: Any = object()
"""The default of a field sent only when the journal recorded it (null is a value it may hold)."""


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


@attrs.frozen
class CheckpointDiffResult:
    diff: str  # a unified diff of what the turn changed


@attrs.frozen
class FileChangeWire:
    """One file a turn changed."""

    path: str
    kind: str
    added: int | None
    removed: int | None
    origin: str
    moved_from: str | None = omitted()


@attrs.frozen
class TurnWire:
    message_id: str
    started_at: str | None
    ended_at: str | None
    files: list[FileChangeWire]
    outside: list[FileChangeWire]  # changed outside the workspace's watch
    warnings: list[str]


@attrs.frozen
class InterruptedWire:
    """A restore a kill interrupted, as the restart settled it."""

    to_message_id: str
    started_at: str | None
    restore: str  # "code" | "both"
    finished: Any
    already_done: Any
    kept: Any
    temporaries_removed: Any
    conversation: Any = omitted(ABSENT)
    error: Any = omitted(ABSENT)


@attrs.frozen
class CheckpointListResult:
    watching: bool
    turns: list[TurnWire]
    interrupted: list[InterruptedWire]


@attrs.frozen
class RestoreStepWire:
    path: str
    action: str
    reason: str | None = omitted()
    moved_back_from: str | None = omitted()


@attrs.frozen
class RestoredWire:
    to_message_id: str
    dry_run: bool
    files: list[RestoreStepWire]
    outside: list[str]
    restored: int
    kept: int
