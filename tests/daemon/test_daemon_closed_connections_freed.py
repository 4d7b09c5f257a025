"""A closed connection's server is freed when the connection closes, not at the collector's
next full pass.

Found (issue 17, after the fuzz): a full gc.collect() in the daemon gave back 16 MiB, the
servers of closed connections (~700 objects each: the handlers are registered per server, as
closures and partials over it) waiting in reference cycles: the server and its protocol and
feature table point at each other; the connection's stop hook holds its finished task, whose
context holds the connection, which holds the server. The daemon makes full passes rare
(daemon/process.py), so they waited. Now the server lets go of them once its connection is
closed and its requests answered (TokendServer.release, Connection.forget).

The daemon's own pieces over a real socket pair: `run_connection` (as the listener runs it for
each client) with the daemon's connection factory (tokend's server over the shared app, its
close callbacks), a client speaking JSON-RPC from a thread; the collector off, as it is between
those full passes."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.lsp_client import LspClient
from tokend.daemon.conn import Connection, Registry
from tokend.daemon.main import DaemonHost
from tokend.daemon.outbox import Outbox
from tokend.daemon.serve_conn import run_connection
from tokend.lsp.server import TokendServer, create_server
from tokend.service.app import App, open_app


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = open_app(None, f"sqlite:///{tmp_path}/tokend.sqlite3", serving=True)  # as the daemon
    yield app
    app.close()


class _Daemon:
    """What a connection asks of the daemon (DaemonHandle)."""

    @contextmanager
    def busy(self) -> Iterator[None]:
        yield

    def status(self) -> dict[str, Any]:
        return {"pid": 0, "connections": []}


def _client(sock: socket.socket, root: Path) -> list[dict[str, Any]]:
    """An editor's and an agent's turn on one connection, a refusal among them, then gone."""
    client = LspClient(sock.fileno(), sock.fileno(), sock)
    replies: list[dict[str, Any]] = []

    def request(method: str, params: Any) -> dict[str, Any]:
        replies.append(client.request(method, params, timeout=60))
        return replies[-1]

    def send(message: dict[str, Any]) -> None:
        client.notify(message["method"], message["params"])

    init = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
    request("initialize", init)
    send({"method": "initialized", "params": {}})
    created = request("session/create", {"model": "gpt-4o", "workspaceUri": root.as_uri()})
    session = created["result"]["sessionId"]
    text = {"role": "user", "parts": [{"type": "text", "text": "hello"}]}
    request("session/append", {"sessionId": session, "message": text})
    request("budget/snapshot", {"sessionId": session})
    request("context/assemble", {"sessionId": session})
    request("session/create", {"model": 5})  # refused: InvalidParams
    uri = (root / "a.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    send({"method": "textDocument/didOpen", "params": {"textDocument": doc}})
    edit = {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}}}
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{**edit, "text": "2"}]}
    send({"method": "textDocument/didChange", "params": change})
    request("workspace/fileTokens", {"workspaceUri": root.as_uri(), "paths": ["a.py"]})
    client.close()
    return replies


async def _serve_one(app: App, root: Path, servers: weakref.WeakSet[TokendServer]) -> list[Any]:
    def factory(conn: Connection) -> Any:  # as daemon/main.py's connection_factory
        server = create_server(app, DaemonHost(conn))
        server.serve_workspaces()
        conn.add_close_callback(server.unwatch_all)
        conn.add_close_callback(server.leave_workspaces)
        servers.add(server)
        return server

    ours, theirs = socket.socketpair()
    reader, writer = await asyncio.open_unix_connection(sock=ours)
    conn = Connection("c1", "unix", Outbox(writer, name="c1"), _Daemon(), Registry())
    served = asyncio.create_task(run_connection(conn, reader, factory))
    replies = await asyncio.to_thread(_client, theirs, root)
    await served
    return replies


async def test_a_closed_connections_server_is_freed_at_close(app: App, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    servers: weakref.WeakSet[TokendServer] = weakref.WeakSet()
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            replies = await _serve_one(app, root, servers)
            assert ["error" in r for r in replies] == [False] * 5 + [True, False]
        await asyncio.sleep(0.1)  # the loop lets go of the finished connections' tasks
        left = len(servers)
    finally:
        gc.enable()
    assert left == 0  # on main: 3, until a full collection
