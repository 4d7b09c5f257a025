"""The status block a session row keeps (core.statusline.row) gives back the wire Snapshot's
figures that `tokend status` prints. Oracle: the daemon's own wire conversion of the same
snapshot (lsp.convert.to_wire_snapshot), and core.session.gauge_state's FORMAT for the light reader."""

from __future__ import annotations

import json

import pytest

from tokend.commands import status_row as row_reader
from tokend.commands.status_text import claude_code_status, gauge_line
from tokend.core.budget.snapshot import BudgetSnapshot, CallFigures, Totals
from tokend.core.session import gauge_state
from tokend.core.statusline.row import snapshot_of_row, status_row
from tokend.core.usage.stats import TimeFigures
from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot


def _snapshot(call: CallFigures | None) -> BudgetSnapshot:
    return BudgetSnapshot(
        session_id="S1",
        model="claude-sonnet-4-5",
        context_window=200_000,
        max_output_tokens=64_000,
        used_tokens=123_457,
        remaining_tokens=76_543,
        used_percentage=61.7,
        estimated=False,
        breakdown=(),
        autocompact_threshold=167_000,
        compactions=2,
        cost_total_usd=1.234567,
        cost_by_model={"claude-sonnet-4-5": 1.234567},
        totals=Totals(3, 11, 12, 13, 14, 15),
        last_call=call,
        last_estimate_error_pct=None,
        version=41,
        times=TimeFigures(5_634, 2_500, 7, 3),
    )


@pytest.mark.parametrize("call", [None, CallFigures("m9", 21, 22, 23, 24, 25, 26, 1.5, 27)])
def test_the_block_gives_back_what_the_daemon_sends(call: CallFigures | None) -> None:
    snapshot = _snapshot(call)
    block = json.loads(json.dumps(status_row(snapshot, [["/x/config.toml", None]])))
    back = snapshot_of_row(block, "S1", 41)
    sent = json.loads(json.dumps(wire.to_wire(to_wire_snapshot(snapshot))))
    assert back is not None
    assert gauge_line(back) == gauge_line(sent)
    shape = {"cwd": "/w", "project_dir": "/w", "transcript_path": None}
    assert claude_code_status(back, **shape) == claude_code_status(sent, **shape)


def test_a_block_of_another_version_or_shape_is_not_read() -> None:
    block = status_row(_snapshot(None), [])
    assert snapshot_of_row(block, "S1", 42) is None
    assert snapshot_of_row({**block, "format": 0}, "S1", 41) is None
    assert snapshot_of_row({**block, "gauge": [1]}, "S1", 41) is None


def test_the_light_reader_knows_the_gauge_states_format() -> None:
    assert row_reader.GAUGE_STATE_FORMAT == gauge_state.FORMAT
