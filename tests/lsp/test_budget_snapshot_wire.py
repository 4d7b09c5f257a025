"""budget/snapshot's wire object is built field by field: the snapshot's totals went through
dataclasses.astuple, which deep-copies every value and was three quarters of to_wire_snapshot's
time (budget/snapshot round trips 1.2-1.4x main 9f76291's, bench/reshape.py). Counted, not
timed: no copy.deepcopy while a snapshot is converted; the totals are the provider calls the
session was given (the oracle: the usages appended here)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.appending import append
from tokend.core.types import TextPart, Usage
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.wire import to_wire
from tokend.service.app import open_service


def test_a_snapshot_converts_without_deep_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = open_service(None, f"sqlite:///{tmp_path}/snap.sqlite3")
    try:
        sid = service.sessions.create_session("gpt-4o").id
        append(service, sid, "user", [TextPart("make the build pass")])
        append(service, sid, "assistant", [TextPart("done")], usage=Usage(1000, 60, 7, 300, 40))
        append(service, sid, "user", [TextPart("and the docs")])
        append(service, sid, "assistant", [TextPart("done too")], usage=Usage(1500, 90, 0, 900, 0))
        snapshot = service.sessions.snapshot(sid)
    finally:
        service.close()

    copies = []
    original = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: copies.append(a) or original(*a, **k))
    wire = to_wire(to_wire_snapshot(snapshot))
    assert copies == []
    assert wire["totals"] == {
        "calls": 2,
        "inputTokens": 2500,
        "outputTokens": 150,
        "reasoningTokens": 7,
        "cacheReadTokens": 1200,
        "cacheWriteTokens": 40,
    }
