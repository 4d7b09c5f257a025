"""Restore and rewind on the real `tokend serve`: nothing written or deleted outside the
workspace through a symlink swapped in during the agent's turn, modes as they were, reads that
re-check their path, and a restore killed -9 midway settled (and said) at the restart.

The scenarios are bench/restore_scenarios.py's (the `restore_safety` bench runs every variant
beside today's daemon); the oracle is the files on disk and what the client receives.

Found on main: 4 of 4 folder swaps wrote 2 files and deleted 1-2 outside (with or without
`force`); 0600 files came back 0644; `context/assemble` read a file through a swapped folder; a
restore killed midway left 265 of 300 files restored and a "both" rewind 33 of 300 with its
conversation untouched, and nothing told the user (the bench also counts temporary copies left).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.restore_scenarios import (
    METHODS,
    VARIANTS,
    Client,
    Rig,
    RpcFailed,
    agent_turn,
    kill_trial,
    restored_modes,
    rewind_or_restore,
    symlink_variant,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    base = Path(tempfile.mkdtemp(prefix="tkrs-"))  # short: unix socket paths are ~104 bytes
    rig = Rig(base)
    rig.start()
    yield rig
    rig.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def client(rig: Rig) -> Client:
    return rig.client()


CASES = [(v, "checkpoint/restore", force) for v in VARIANTS for force in (False, True)] + [
    ("folder swapped", method, force) for method in METHODS[1:] for force in (False, True)
]


@pytest.mark.parametrize(("variant", "method", "force"), CASES)
def test_a_restore_never_writes_or_deletes_through_a_swapped_symlink(
    rig: Rig, client: Client, variant: str, method: str, force: bool
) -> None:
    result = symlink_variant(client, rig.base, variant, method, force)
    assert (result.outside_written, result.outside_deleted) == (0, 0), result
    assert result.reported >= 1, f"the reply names no path kept for a symlink: {result}"
    assert result.dry_reported == result.reported, f"the dry run foretold otherwise: {result}"
    assert result.modes_kept, "the 0600 file the agent deleted came back with another mode"


@pytest.mark.parametrize("method", ["checkpoint/restore", "session/rewind:both"])
def test_restored_files_get_the_modes_they_had(rig: Rig, client: Client, method: str) -> None:
    modes = restored_modes(client, rig.base, method)
    assert {name: after for name, (_, after) in modes.items()} == {
        name: before for name, (before, _) in modes.items()
    }


def test_a_read_rechecks_its_path_when_a_folder_becomes_a_symlink(rig: Rig, client: Client):
    ws, outside = rig.base / "reads", rig.base / "reads-outside"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "s.txt").write_text("inside text\n")
    outside.mkdir()
    (outside / "s.txt").write_text("OUTSIDE-SECRET\n")
    sid = client.request("session/create", {"model": "gpt-4o", "workspaceUri": ws.as_uri()})[
        "sessionId"
    ]
    client.request("session/append", {"sessionId": sid, "message": _text("user", "look")})
    added = client.request("files/add", {"sessionId": sid, "paths": ["sub/s.txt"]})
    assert added["files"][0]["tokens"] > 0
    os.rename(ws / "sub", ws / "sub.bak")
    os.symlink(outside, ws / "sub")
    time.sleep(1.0)  # the watcher's batch for the swap
    assembled = client.request("context/assemble", {"sessionId": sid, "format": "openai"})
    assert "OUTSIDE-SECRET" not in str(assembled)
    listed = client.request("files/list", {"sessionId": sid})
    (entry,) = listed["files"]
    assert entry["tokens"] == 0 and "outside the workspace" in entry["reason"], entry
    with pytest.raises(RpcFailed) as refused:  # a path a client names is checked there
        client.request(
            "workspace/fileTokens",
            {"workspaceUri": ws.as_uri(), "paths": ["sub/s.txt"], "exact": True},
        )
    assert refused.value.error["code"] == -32602 and "outside" in refused.value.error["message"]


def _text(role: str, text: str) -> dict[str, object]:
    return {"role": role, "parts": [{"type": "text", "text": text}]}


FILES = 300
KILL_FRACTIONS = (0.25, 0.6)  # of the time an unkilled restore of as many files takes


@pytest.mark.parametrize("method", ["checkpoint/restore", "session/rewind:both"])
def test_a_restore_killed_midway_is_settled_and_reported_at_the_restart(method: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="tkrk-"))
    rig = Rig(base)
    rig.start()
    try:
        took = _unkilled_restore_seconds(rig, method)
        trials = [kill_trial(rig, base, method, FILES, took * f) for f in KILL_FRACTIONS]
    finally:
        rig.stop()
        shutil.rmtree(base, ignore_errors=True)
    assert any(not t.answered for t in trials), "every restore finished before its kill"
    for t in trials:
        assert not t.half_unreported, f"{t.restored} of {t.files} restored, nothing said: {t}"
        assert t.temporaries == 0, f"{t.temporaries} temporary copies left: {t}"
        assert not t.both_split, f"files and conversation disagree after the restart: {t}"
        if t.reported:
            assert t.log_message, f"checkpoint/list says it, no window/logMessage did: {t}"


def _unkilled_restore_seconds(rig: Rig, method: str) -> float:
    client = rig.client()
    ws = rig.base / "calibrate"
    names = [f"p{i % 10}/m{i}.py" for i in range(FILES)]
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("v1\n")

    def change() -> None:
        for name in names:
            (ws / name).write_text("v2\n")

    sid, first = agent_turn(client, ws, change, set(names))
    started = time.monotonic()
    rewind_or_restore(client, sid, first, method)
    return time.monotonic() - started
