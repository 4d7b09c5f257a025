"""Cancelling the automatic compaction `context/assemble` starts as a pre-send check, end to
end: the real daemon (`tokend serve` on a unix socket) and `tokend lsp --standalone` over
pipes, a real SQLite file, and a summarizer on 127.0.0.1 that reads the request and does not
answer until its connection is closed.

The session is brought over the autocompact threshold by the measured system prompt of a first
assemble (appends stay under it, so no append starts a compaction). Oracles: the first
assemble's reply (what "as if no compaction ran" is), what the hanging server saw, the $/progress
notifications on the wire, and the session as session/messages and budget/snapshot give it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tokend_env
from tests.daemon.real_daemon import real_daemons
from tests.e2e.test_compaction_cancel import (
    PROMPT,
    HangingModel,
    Peer,
    initialize,
    state_of,
    until,
)
from tests.in_process import InProcessClient
from tests.lsp_client import RpcClient

CONTEXT_OVERFLOW = -33003
SYSTEM = "You are a careful coding agent; keep the public API stable. " * 400  # ~4,800 tokens


@pytest.fixture
def model(isolated_dirs: Path):
    server = HangingModel()
    folder = isolated_dirs / "xdg_config_home" / "tokend"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        "[summarizer]\n"
        'chain = ["openai", "extractive"]\n'
        f'openai_base_url = "{server.base_url}"\n'
        'openai_model = "hanging"\n'
        "timeout_s = 90\n"
        "[compaction]\n"
        "reserved = 26000\n"  # the threshold well under what an assemble may hold
    )
    yield server
    server.close()


async def over_the_threshold(client: RpcClient) -> tuple[str, dict[str, Any]]:
    """A session whose messages stay under the threshold, then an assemble whose system prompt
    takes the gauge over it: (session id, that assemble's reply)."""
    created = await client.request("session/create", {"model": "gpt-4o", "contextWindow": 40_000})
    sid = created["sessionId"]
    threshold = (await client.request("budget/snapshot", {"sessionId": sid}))[
        "autocompactThreshold"
    ]
    i = 0
    while True:
        for role in ("user", "assistant"):
            said = f"turn {i} ({role}): the parser keeps its entry point. " * 40
            message = {"role": role, "parts": [{"type": "text", "text": said}]}
            await client.request("session/append", {"sessionId": sid, "message": message})
        used = (await client.request("budget/snapshot", {"sessionId": sid}))["usedTokens"]
        if used + 1_500 >= threshold - 2_500:
            break
        i += 1
    first = await client.request(
        "context/assemble", {"sessionId": sid, "format": "openai", "system": SYSTEM}
    )
    snapshot = await client.request("budget/snapshot", {"sessionId": sid})
    assert snapshot["usedTokens"] >= threshold > used, (snapshot["usedTokens"], threshold, used)
    assert snapshot["compactions"] == 0
    return sid, first


async def test_cancel_request_of_an_assemble_stops_its_compaction_and_assembles_as_before(
    model: HangingModel,
) -> None:
    """$/cancelRequest of context/assemble while the pre-send compaction's summarizer call is
    pending: the call is stopped, nothing is written, the reply is the uncompacted assembly."""
    with real_daemons(pytest.MonkeyPatch()) as daemons:
        path = daemons.base / "run" / "t.sock"
        daemons.serve("--listen", f"unix:{path}")
        reader, writer = await asyncio.open_unix_connection(str(path))
        client = RpcClient(reader, writer)
        await initialize(client)
        peer = Peer(client)
        sid, first = await over_the_threshold(client)
        before = await state_of(client, sid)

        params = {"sessionId": sid, "format": "openai", "system": SYSTEM}
        msg_id, reply = client.begin("context/assemble", params)
        await until(lambda: model.arrived)
        cancelled_at = time.monotonic()
        client.notify("$/cancelRequest", {"id": msg_id})
        body = await asyncio.wait_for(reply, PROMPT)
        assert "error" not in body, body
        assert body["result"]["messages"] == first["messages"]
        assert body["result"]["totalTokens"] == first["totalTokens"]
        await until(lambda: model.closed, PROMPT)
        assert model.closed[0] - cancelled_at < PROMPT  # the HTTP call stopped, not timed out
        [token] = {p["token"] for p in peer.progress}  # the server made one for it
        await until(lambda: len(peer.kinds(token)) == 2)
        assert peer.kinds(token) == [("begin", True), ("end", "cancelled: nothing written")]
        assert await state_of(client, sid) == before
        assert peer.compacted == []

        # The next assemble's compaction runs to its end (the summarizer now answers).
        again = await client.request("context/assemble", params)
        await until(lambda: peer.compacted)
        assert peer.compacted[0]["automatic"] is True
        assert again["totalTokens"] < first["totalTokens"]
        assert (await client.request("budget/snapshot", {"sessionId": sid}))["compactions"] == 1
        peer.stop()
        await client.close()
        writer.close()


async def test_a_progress_cancel_of_an_assembles_compaction_leaves_the_overflow_to_say(
    model: HangingModel, tmp_path: Path
) -> None:
    """window/workDoneProgress/cancel of the server-made token, on `tokend lsp --standalone`;
    the assemble carries a chat file the uncompacted context cannot hold: ContextOverflow, the
    same as without a compaction. A restart shows the session as it was."""
    db = tmp_path / "tokend.sqlite3"
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    client = await InProcessClient.start(cwd=tmp_path, env=env)
    await initialize(client)
    peer = Peer(client)
    sid, _ = await over_the_threshold(client)
    before = await state_of(client, sid)
    big = {"path": "src/big.py", "text": "def f(x):\n    return x + 1\n" * 2_500}
    params = {"sessionId": sid, "format": "openai", "system": SYSTEM, "chatFiles": [big]}
    _, reply = client.begin("context/assemble", params)
    await until(lambda: model.arrived)
    await until(lambda: peer.progress)
    token = peer.progress[0]["token"]
    assert peer.kinds(token) == [("begin", True)]
    client.notify("window/workDoneProgress/cancel", {"token": token})
    body = await asyncio.wait_for(reply, PROMPT)
    assert body["error"]["code"] == CONTEXT_OVERFLOW, body
    assert "drop chat file src/big.py" in str(body["error"]["data"]["suggestions"])
    await until(lambda: model.closed, PROMPT)
    await until(lambda: len(peer.kinds(token)) == 2)
    assert peer.kinds(token)[1] == ("end", "cancelled: nothing written")
    assert await state_of(client, sid) == before
    peer.stop()
    assert await client.shutdown() == 0

    again = await InProcessClient.start(cwd=tmp_path, env=env)
    await initialize(again)
    assert await state_of(again, sid) == before
    assert await again.shutdown() == 0
