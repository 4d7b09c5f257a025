"""checkpoint/list, checkpoint/diff, checkpoint/restore: what each turn changed, and undoing it
(the app's checkpointer; results converted by lsp/results.py)."""

from __future__ import annotations

from typing import Any

import attrs

from tokend.lsp import wire
from tokend.lsp.handler_table import features, register_features
from tokend.lsp.results import to_wire_interrupted, to_wire_restored, to_wire_turn
from tokend.lsp.server import TokendServer
from tokend.service import restore_journal
from tokend.service.checkpoint_views import diff_async, list_async, restore_code, watching


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


async def diff(ls: TokendServer, params: CheckpointDiffParams) -> CheckpointDiffResult:
    p = params
    return CheckpointDiffResult(
        await diff_async(ls.app.checkpoints, p.session_id, p.message_id, p.path)
    )


FEATURES = features({"checkpoint/diff": diff})


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    register_features(server, FEATURES)

    @server.feature("checkpoint/list")
    @rpc
    async def list_checkpoints(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(CheckpointListParams, params)
        checkpoints = ls.app.checkpoints
        turns = await list_async(checkpoints, p.session_id)
        settled = restore_journal.interrupted(checkpoints, p.session_id)
        return {
            "watching": watching(checkpoints, p.session_id),
            "turns": [to_wire_turn(t) for t in turns],
            "interrupted": [to_wire_interrupted(i) for i in settled],
        }

    @server.feature("checkpoint/restore")
    @rpc
    async def restore(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(CheckpointRestoreParams, params)
        with ls.host.busy():
            done = await restore_code(
                ls.app.checkpoints, p.session_id, p.to_message_id, p.dry_run, p.force
            )
        return to_wire_restored(done)
