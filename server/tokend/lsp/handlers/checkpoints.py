"""The checkpoints feature: checkpoint/list, checkpoint/diff, checkpoint/restore: what each turn
changed, and undoing it (the app's checkpointer; results converted by lsp/results.py)."""

from __future__ import annotations

from tokend.lsp.handler_table import features
from tokend.lsp.results import to_wire_interrupted, to_wire_restored, to_wire_turn
from tokend.lsp.server import TokendServer
from tokend.lsp.wire.checkpoints import (
    CheckpointDiffParams,
    CheckpointDiffResult,
    CheckpointListParams,
    CheckpointListResult,
    CheckpointRestoreParams,
    RestoredWire,
)
from tokend.service.checkpoints import restore_journal
from tokend.service.checkpoints.views import diff_async, list_async, restore_code, watching


async def list_checkpoints(ls: TokendServer, params: CheckpointListParams) -> CheckpointListResult:
    checkpoints = ls.app.checkpoints
    turns = await list_async(checkpoints, params.session_id)
    settled = restore_journal.interrupted(checkpoints, params.session_id)
    return CheckpointListResult(
        watching(checkpoints, params.session_id),
        [to_wire_turn(t) for t in turns],
        [to_wire_interrupted(i) for i in settled],
    )


async def diff(ls: TokendServer, params: CheckpointDiffParams) -> CheckpointDiffResult:
    p = params
    return CheckpointDiffResult(
        await diff_async(ls.app.checkpoints, p.session_id, p.message_id, p.path)
    )


async def restore(ls: TokendServer, params: CheckpointRestoreParams) -> RestoredWire:
    p = params
    with ls.host.busy():
        done = await restore_code(
            ls.app.checkpoints, p.session_id, p.to_message_id, p.dry_run, p.force
        )
    return to_wire_restored(done)


FEATURES = features(
    {
        "checkpoint/list": list_checkpoints,
        "checkpoint/diff": diff,
        "checkpoint/restore": restore,
    }
)
