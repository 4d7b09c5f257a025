"""Cancelling a compaction, end to end: the real daemon (`tokend serve` on a unix socket) and
`tokend lsp --standalone` over pipes, a real SQLite file, and a summarizer on 127.0.0.1 that
reads the request and does not answer until its connection is closed.

Oracles: what the hanging server saw (the request arriving, the connection closing, when), the
JSON-RPC replies and notifications on the wire, and the session as session/messages and
budget/snapshot give it before and after (and after a restart)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tokend_env
from tests.daemon.real_daemon import real_daemons
from tests.in_process import InProcessClient
from tests.lsp_client import RpcClient, frame
from tests.model_servers import GOOD_ANSWER

REQUEST_CANCELLED = -32800
PROMPT = 5.0  # seconds: what "at once" means on a shared, loaded machine


class HangingModel:
    """An OpenAI-shaped /chat/completions on 127.0.0.1. The first `hang` requests are read and
    never answered: the server waits for the client to close the connection and records when
    (monotonic seconds). Later requests get a well-formed summary at once."""

    def __init__(self, hang: int = 1) -> None:
        self.hang = hang
        self.arrived: list[float] = []
        self.closed: list[float] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(65536)
            self.arrived.append(time.monotonic())
            if len(self.arrived) <= self.hang:
                conn.settimeout(120)
                try:
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass
                self.closed.append(time.monotonic())
                return
            answer = {
                "choices": [
                    {
                        "message": {"content": GOOD_ANSWER.format(model="after the cancel")},
                        "finish_reason": "stop",
                    }
                ]
            }
            payload = json.dumps(answer).encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(payload), payload)
            )

    def close(self) -> None:
        self._sock.close()


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
    )
    yield server
    server.close()


async def until(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


class Peer:
    """The client side's reading of server→client traffic: answers window/workDoneProgress/
    create, keeps every $/progress and session/didCompact."""

    def __init__(self, client: RpcClient) -> None:
        self.client = client
        self.progress: list[dict[str, Any]] = []
        self.compacted: list[dict[str, Any]] = []
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            body = await self.client.notifications.get()
            if body.get("method") == "window/workDoneProgress/create":
                self.client.send_raw(frame({"jsonrpc": "2.0", "id": body["id"], "result": None}))
            elif body.get("method") == "$/progress":
                self.progress.append(body["params"])
            elif body.get("method") == "session/didCompact":
                self.compacted.append(body["params"])

    def kinds(self, token: Any) -> list[tuple[str, Any]]:
        return [
            (p["value"]["kind"], p["value"].get("cancellable") or p["value"].get("message"))
            for p in self.progress
            if p["token"] == token
        ]

    def stop(self) -> None:
        self._task.cancel()


async def initialize(client: RpcClient) -> None:
    capabilities = {"window": {"workDoneProgress": True}}
    params = {"processId": None, "rootUri": None, "capabilities": capabilities}
    await client.request("initialize", {**params, "initializationOptions": {}})
    client.notify("initialized", {})


async def conversation(client: RpcClient, turns: int, window: int | None = None) -> str:
    params: dict[str, Any] = {"model": "gpt-4o"}
    if window is not None:
        params["contextWindow"] = window
    sid = (await client.request("session/create", params))["sessionId"]
    for i in range(turns):
        for role, said in (
            ("user", f"request {i}: keep the public API of module {i} stable " * 4),
            ("assistant", f"done {i} " + "explained " * 3000),
        ):
            message = {"role": role, "parts": [{"type": "text", "text": said}]}
            await client.request("session/append", {"sessionId": sid, "message": message})
    return sid


async def state_of(client: RpcClient, sid: str) -> tuple[Any, ...]:
    snapshot = await client.request("budget/snapshot", {"sessionId": sid})
    listed = await client.request("session/messages", {"sessionId": sid, "includeCompacted": True})
    messages = [(m["messageId"], m["kind"], m["live"], m["tokens"]) for m in listed["messages"]]
    figures = ("version", "usedTokens", "compactions", "estimated")
    return tuple(snapshot[k] for k in figures), messages


async def test_cancel_request_stops_a_slow_summary_and_writes_nothing(model, tmp_path):
    """session/compact over the daemon's unix socket; $/cancelRequest while the summarizer's
    HTTP call is pending."""
    with real_daemons(pytest.MonkeyPatch()) as daemons:
        path = daemons.base / "run" / "t.sock"
        daemons.serve("--listen", f"unix:{path}")
        reader, writer = await asyncio.open_unix_connection(str(path))
        client = RpcClient(reader, writer)
        await initialize(client)
        peer = Peer(client)
        sid = await conversation(client, 10)
        before = await state_of(client, sid)

        params = {"sessionId": sid, "strategy": "summarize", "workDoneToken": "compact-1"}
        msg_id, reply = client.begin("session/compact", params)
        await until(lambda: model.arrived)
        cancelled_at = time.monotonic()
        client.notify("$/cancelRequest", {"id": msg_id})
        body = await asyncio.wait_for(reply, PROMPT)
        assert body["error"]["code"] == REQUEST_CANCELLED
        await until(lambda: model.closed, PROMPT)
        assert model.closed[0] - cancelled_at < PROMPT  # the HTTP call stopped, not timed out
        await until(lambda: len(peer.kinds("compact-1")) == 2)
        assert peer.kinds("compact-1") == [("begin", True), ("end", "cancelled: nothing written")]
        assert await state_of(client, sid) == before  # nothing half-applied, nothing recorded

        # Later work is not disturbed: an append, then a compaction the summarizer now answers.
        message = {"role": "user", "parts": [{"type": "text", "text": "one more thing"}]}
        await client.request("session/append", {"sessionId": sid, "message": message})
        done = await client.request("session/compact", {"sessionId": sid, "strategy": "summarize"})
        [action] = done["actions"]
        assert action["kind"] == "summarize", action["detail"]
        assert "openai:hanging: used" in action["detail"]
        assert done["snapshot"]["compactions"] == 1
        peer.stop()
        await client.close()
        writer.close()


async def test_a_progress_cancel_stops_a_compaction_it_names(model, tmp_path):
    """window/workDoneProgress/cancel of the token a session/compact passed: the same as
    cancelling the request; `tokend lsp --standalone` over pipes, and a restart shows the same
    session."""
    db = tmp_path / "tokend.sqlite3"
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    client = await InProcessClient.start(cwd=tmp_path, env=env)
    await initialize(client)
    peer = Peer(client)
    sid = await conversation(client, 10)
    before = await state_of(client, sid)
    params = {"sessionId": sid, "strategy": "full", "workDoneToken": 7}
    _, reply = client.begin("session/compact", params)
    await until(lambda: model.arrived)
    await until(lambda: peer.kinds(7))
    client.notify("window/workDoneProgress/cancel", {"token": 7})
    body = await asyncio.wait_for(reply, PROMPT)
    assert body["error"]["code"] == REQUEST_CANCELLED
    await until(lambda: model.closed, PROMPT)
    assert await state_of(client, sid) == before
    peer.stop()
    assert await client.shutdown() == 0

    again = await InProcessClient.start(cwd=tmp_path, env=env)
    await initialize(again)
    assert await state_of(again, sid) == before
    assert await again.shutdown() == 0


async def test_an_automatic_compaction_is_cancelled_by_its_progress_token(model, tmp_path):
    """The append that passes the threshold starts an automatic compaction with a server-made,
    cancellable progress token; cancelling it leaves the append done and nothing else written.
    The next append's automatic compaction runs to its end."""
    db = tmp_path / "tokend.sqlite3"
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    client = await InProcessClient.start(cwd=tmp_path, env=env)
    await initialize(client)
    peer = Peer(client)
    sid = await conversation(client, 0, window=40_000)
    threshold = (await client.request("budget/snapshot", {"sessionId": sid}))[
        "autocompactThreshold"
    ]
    i = 0
    while True:  # just under the threshold
        message = {"role": "user", "parts": [{"type": "text", "text": f"turn {i} " * 300}]}
        await client.request("session/append", {"sessionId": sid, "message": message})
        used = (await client.request("budget/snapshot", {"sessionId": sid}))["usedTokens"]
        if used + 2_000 >= threshold:
            break
        i += 1
    before = await state_of(client, sid)
    message = {"role": "user", "parts": [{"type": "text", "text": "past the line " * 900}]}
    _, reply = client.begin("session/append", {"sessionId": sid, "message": message})
    await until(lambda: model.arrived)
    await until(lambda: peer.progress)
    token = peer.progress[0]["token"]
    assert peer.kinds(token) == [("begin", True)]
    client.notify("window/workDoneProgress/cancel", {"token": token})
    body = await asyncio.wait_for(reply, PROMPT)
    appended = body["result"]["messageId"]  # the append itself stands
    await until(lambda: model.closed, PROMPT)
    await until(lambda: len(peer.kinds(token)) == 2)
    assert peer.kinds(token)[1] == ("end", "cancelled: nothing written")
    figures, messages = await state_of(client, sid)
    assert figures[2] == 0 and messages == [
        *before[1],
        (appended, "message", True, messages[-1][3]),
    ]
    assert peer.compacted == []

    message = {"role": "user", "parts": [{"type": "text", "text": "and again"}]}
    await client.request("session/append", {"sessionId": sid, "message": message})
    await until(lambda: peer.compacted)
    assert peer.compacted[0]["automatic"] is True
    assert (await client.request("budget/snapshot", {"sessionId": sid}))["compactions"] == 1
    peer.stop()
    assert await client.shutdown() == 0
