"""A small real pygls server for the daemon tests, one per connection.

Requests: test/echo (params back, with the connection id), test/broadcast (a notification
to every other connection), test/status (the daemon's status), test/busy (holds daemon.busy()
for params.seconds), test/work (params.seconds of work that does not hold busy(), then appends
params.line to the file params.path: a write that must not be lost), test/flood (params.count
droppable budget/didChange notifications, then the reply), test/big (a reply of params.bytes),
test/attach (sets the connection's session id).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pygls.lsp.server import LanguageServer

from tokend.daemon.conn import Connection
from tokend.lsp.protocol import (
    TokendProtocol,  # keeps test/* params as plain JSON
    shared_converter,
)
from tokend.lsp.wire.common import to_wire
from tokend.lsp.wire.daemon import to_wire_connection, to_wire_host


def create_fixture_server(conn: Connection) -> LanguageServer:
    server = LanguageServer(
        "tokend-fixture", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
    )

    @server.feature("test/echo")
    def echo(ls: LanguageServer, params: Any) -> dict[str, Any]:
        return {"echo": params, "connectionId": conn.id}

    @server.feature("test/broadcast")
    def broadcast(ls: LanguageServer, params: Any) -> dict[str, Any]:
        return {"sent": conn.registry.notify_all("test/broadcast", params, exclude=conn)}

    @server.feature("test/status")
    def status(ls: LanguageServer, params: Any) -> dict[str, Any]:
        status = conn.daemon.status()  # daemon/status's host part, as the wire carries it
        connections = [to_wire_connection(c) for c in status.connections]
        return {**to_wire(to_wire_host(status)), "connections": to_wire(connections)}

    @server.feature("test/busy")
    async def busy(ls: LanguageServer, params: Any) -> dict[str, Any]:
        with conn.daemon.busy():
            await asyncio.sleep(params["seconds"])
        return {}

    @server.feature("test/work")
    async def work(ls: LanguageServer, params: Any) -> dict[str, Any]:
        await asyncio.sleep(params["seconds"])
        with open(params["path"], "a", encoding="utf-8") as file:
            file.write(params["line"] + "\n")
        return {"done": params["line"]}

    @server.feature("test/big")
    def big(ls: LanguageServer, params: Any) -> dict[str, Any]:
        return {"blob": "x" * params["bytes"]}

    @server.feature("test/flood")
    def flood(ls: LanguageServer, params: Any) -> dict[str, Any]:
        for seq in range(params["count"]):
            ls.protocol.notify("budget/didChange", {"seq": seq, "pad": "x" * params.get("pad", 0)})
        return {"count": params["count"]}

    @server.feature("test/attach")
    def attach(ls: LanguageServer, params: Any) -> dict[str, Any]:
        conn.session_id = params["sessionId"]
        return {}

    return server
