"""A followed Claude Code reply is imported at its first record and grows as it streams, through
a real daemon: each growth is a change of the session that its listeners hear.

Oracle: the transcript read with json (each record's usage; a reply's records share
message.id and requestId, the last one's usage is final).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import session_file
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 30.0


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        runtime.serve("--idle-timeout", "0")
        yield runtime


def _growing_reply(records: list[dict[str, Any]]) -> tuple[int, int]:
    """(first, last) record index of the first reply whose usage grows while it streams."""
    seen: dict[tuple[str, str], list[int]] = {}
    for index, record in enumerate(records):
        if record.get("type") == "assistant":
            key = (record["message"]["id"], record["requestId"])
            seen.setdefault(key, []).append(index)
    for indexes in seen.values():
        outputs = {records[i]["message"]["usage"]["output_tokens"] for i in indexes}
        if len(outputs) > 1:
            return indexes[0], indexes[-1]
    raise AssertionError("no reply grows in this transcript")


def _calls(records: list[dict[str, Any]]) -> int:
    return len({(r["message"]["id"], r["requestId"]) for r in records if r["type"] == "assistant"})


def _until(client: LspClient, wanted: Any) -> dict[str, Any]:
    """The first budget/didChange snapshot for which `wanted(snapshot)` holds."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        message = client.read_message(max(0.0, deadline - time.monotonic()))
        if message.get("method") == "budget/didChange":
            snapshot = message["params"]["snapshot"]
            if wanted(snapshot):
                return snapshot


def test_a_reply_is_counted_at_its_first_record_and_grows_by_changes_heard(
    daemons: Daemons, tmp_path: Path
) -> None:
    lines = session_file("258c7280-ae70-4798-800f-63464d01a85d.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    first, last = _growing_reply(records)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines[:first]) + "\n")
    client = LspClient.initialized(socket_path(), "test")
    try:
        client.result("follow/start", {"agent": "claude-code", "path": str(transcript)})
        calls = _calls(records[: first + 1])
        started = records[first]["message"]["usage"]["output_tokens"]
        with transcript.open("a") as out:  # the reply's first block, and nothing after it
            out.write(lines[first] + "\n")
        counted = _until(client, lambda s: s["totals"]["calls"] == calls)
        assert counted["lastCall"]["outputTokens"] == started
        with transcript.open("a") as out:  # the rest of the reply (and tool results between)
            out.write("\n".join(lines[first + 1 : last + 1]) + "\n")
        final = records[last]["message"]["usage"]["output_tokens"]
        grown = _until(client, lambda s: s["lastCall"]["outputTokens"] == final)
        assert grown["totals"]["calls"] == calls  # the same call, its usage grown
        assert grown["version"] > counted["version"]
    finally:
        client.close()
