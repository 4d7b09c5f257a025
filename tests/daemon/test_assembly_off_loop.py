"""Found (issue 18): `context/assemble` built its repo map (PageRank over the workspace's tags),
read and counted the files on the event loop, so another editor's `budget/snapshot` waited
behind it for seconds. The assembly is now built in the service's worker threads: the real
`tokend serve`, a real tree on disk, two connections.

Judged by order, not by a clock: while the assemble is in flight (`daemon/status` counts it as
busy, and its reply has not come), the other connection's snapshots are answered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient

MODEL = "gpt-4o"
FILES = 1500  # a tree whose map takes a while to rank and fit, not milliseconds
ASSEMBLE_ID = 99
REQUEST_CANCELLED = -32800


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Daemons]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # a fresh workspace cache
    with real_daemons(monkeypatch) as running:
        yield running


def _tree(root: Path) -> Path:
    """Python files whose functions call each other's (a dense reference graph to rank)."""
    for i in range(FILES):
        folder = root / f"pkg{i % 25}" / f"sub{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"def f_{i}_{j}(x):\n    return f_{(i * 7 + j) % FILES}_{j % 20}(x) + {j}\n\n"
            for j in range(20)
        )
        (folder / f"m{i}.py").write_text(body)
    return root


def _client(daemons: Daemons, root: Path, name: str) -> LspClient:
    client = LspClient.unix(daemons.base / "run" / "tokend" / "daemon.sock")
    params = {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": {},
        "clientInfo": {"name": name},
    }
    assert "result" in client.request("initialize", params)
    client.notify("initialized", {})
    return client


def _replied(client: LspClient, request_id: int) -> dict | None:
    """The reply to `request_id` if it is already there (notifications are skipped)."""
    while True:
        try:
            message = client.read_message(0.0)  # what has arrived; a partial one waits
        except TimeoutError:
            return None
        if message.get("id") == request_id and "method" not in message:
            return message


def test_another_connections_snapshot_is_answered_while_an_assemble_builds_its_map(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "tree")
    daemons.serve("--idle-timeout", "0")
    agent, editor = _client(daemons, root, "agent"), _client(daemons, root, "editor")
    created = agent.request("session/create", {"model": MODEL, "workspaceUri": root.as_uri()})
    sid = created["result"]["sessionId"]
    text = {"type": "text", "text": "why does f_3_4 return the wrong value?"}
    agent.request(
        "session/append", {"sessionId": sid, "message": {"role": "user", "parts": [text]}}
    )
    watched = editor.request("session/create", {"model": MODEL})["result"]["sessionId"]
    # The tags are in (a small map of another budget: the assemble's own map is not cached).
    small = agent.request("repoMap/get", {"sessionId": sid, "budgetTokens": 64}, timeout=300)
    assert small["result"]["text"], small

    agent.send(
        {
            "jsonrpc": "2.0",
            "id": ASSEMBLE_ID,
            "method": "context/assemble",
            "params": {"sessionId": sid, "format": "openai"},
        }
    )
    answered_during = 0
    reply = None
    while reply is None:
        snapshot = editor.request("budget/snapshot", {"sessionId": watched}, timeout=120)
        assert snapshot["result"]["sessionId"] == watched
        status = editor.request("daemon/status", timeout=120)["result"]
        reply = _replied(agent, ASSEMBLE_ID)
        if status["busy"] >= 1 and reply is None:
            answered_during += 1  # answered while the assemble was still being built
    assert "result" in reply, reply
    chunks = {c["name"]: c["tokens"] for c in reply["result"]["chunks"]}
    assert chunks["repoMap"] > 0, chunks  # the assemble did build the workspace's map
    assert answered_during >= 1, "no snapshot was answered while the assemble was in flight"
    breakdown = agent.request("budget/snapshot", {"sessionId": sid})["result"]["breakdown"]
    assert "repoMap" in {b["category"] for b in breakdown}, breakdown  # its figures recorded
    agent.close()
    editor.close()


def test_a_cancel_while_the_assemble_builds_answers_request_cancelled_and_records_nothing(
    daemons: Daemons, tmp_path: Path
) -> None:
    """protocol.md: a `$/cancelRequest` that arrives while the assembly is being built answers
    RequestCancelled and records no measured figures (on main the build held the loop, so the
    cancel was read only after the reply had gone)."""
    root = _tree(tmp_path / "tree")
    daemons.serve("--idle-timeout", "0")
    agent, editor = _client(daemons, root, "agent"), _client(daemons, root, "editor")
    created = agent.request("session/create", {"model": MODEL, "workspaceUri": root.as_uri()})
    sid = created["result"]["sessionId"]
    text = {"type": "text", "text": "why does f_3_4 return the wrong value?"}
    agent.request(
        "session/append", {"sessionId": sid, "message": {"role": "user", "parts": [text]}}
    )
    agent.request("repoMap/get", {"sessionId": sid, "budgetTokens": 64}, timeout=300)
    params = {"sessionId": sid, "format": "openai"}
    agent.send(
        {"jsonrpc": "2.0", "id": ASSEMBLE_ID, "method": "context/assemble", "params": params}
    )
    reply = None
    while editor.request("daemon/status", timeout=120)["result"]["busy"] < 1:
        reply = _replied(agent, ASSEMBLE_ID)  # answered while the map is being built, or
        if reply is not None:  # (main) only once the assemble was done
            break
    if reply is None:
        agent.notify("$/cancelRequest", {"id": ASSEMBLE_ID})
        reply = agent.read_message(120)
        while reply.get("id") != ASSEMBLE_ID or "method" in reply:
            reply = agent.read_message(120)
    assert reply.get("error", {}).get("code") == REQUEST_CANCELLED, reply
    snapshot = agent.request("budget/snapshot", {"sessionId": sid})["result"]
    categories = {b["category"] for b in snapshot["breakdown"]}
    assert "repoMap" not in categories, snapshot["breakdown"]  # nothing recorded
    agent.close()
    editor.close()
