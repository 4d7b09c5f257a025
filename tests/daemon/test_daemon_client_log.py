"""ClientLogHandler: a warning reaches the clients it concerns, as a real window/logMessage.

A daemon on a real unix socket (in process, its loop on a thread), real clients; the servers
log on purpose through tokend's logger, as the daemon's own code does.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tests.daemon.test_daemon_connections import InProcessDaemon
from tests.lsp_client import LspClient
from tokend.daemon.conn import Connection
from tokend.daemon.main import WORKSPACE_EXTRA, ClientLogHandler
from tokend.lsp.protocol import TokendProtocol, shared_converter

log = logging.getLogger("tokend.test")


def _factory(handler: ClientLogHandler) -> Any:
    def create(conn: Connection) -> LanguageServer:
        handler.serving(conn)
        server = LanguageServer(
            "log-test", "0", protocol_cls=TokendProtocol, converter_factory=shared_converter
        )
        server.workspace_uri = None  # type: ignore[attr-defined]

        @server.feature(types.INITIALIZE)
        def initialize(ls: LanguageServer, params: types.InitializeParams) -> None:
            ls.workspace_uri = params.root_uri  # type: ignore[attr-defined]

        @server.feature("test/warn")
        def warn(ls: LanguageServer, params: Any) -> dict[str, Any]:
            if params["scope"] == "own":
                log.warning("your request was odd")
            elif params["scope"] == "workspace":
                log.error("bad .tokend.toml", extra={WORKSPACE_EXTRA: params["uri"]})
            elif params["scope"] == "settings":  # WorkspaceSettings' hook, from a worker thread
                warnings = tuple(params["warnings"])
                worker = threading.Thread(
                    target=handler.workspace_warnings, args=(params["uri"], warnings)
                )
                worker.start()
                worker.join()
            elif params["scope"] == "daemon":  # logged by the daemon, outside any connection
                loop = asyncio.get_running_loop()
                loop.call_soon(log.warning, "the daemon is unwell", context=contextvars.Context())
            return {}

        return server

    return create


@pytest.fixture
def daemon() -> Iterator[InProcessDaemon]:
    handler = ClientLogHandler()
    logging.getLogger("tokend").addHandler(handler)
    try:
        with InProcessDaemon(_factory(handler)) as running:
            yield running
    finally:
        logging.getLogger("tokend").removeHandler(handler)


def _client(daemon: InProcessDaemon, name: str, root_uri: str | None) -> LspClient:
    client = LspClient.unix(daemon.path)
    params = {"processId": None, "rootUri": root_uri, "capabilities": {}}
    assert "result" in client.request("initialize", {**params, "clientInfo": {"name": name}})
    client.notify("initialized", {})
    return client


def _told(client: LspClient) -> list[tuple[int, str]]:
    """The logMessages it got, after a round trip (so any queued before have arrived)."""
    client.request("test/warn", {"scope": "nothing"})
    return [
        (n["params"]["type"], n["params"]["message"])
        for n in client.notifications
        if n["method"] == "window/logMessage"
    ]


def test_each_warning_reaches_the_clients_it_concerns(daemon: InProcessDaemon) -> None:
    a = _client(daemon, "a", "file:///work/a")
    a_too = _client(daemon, "a-too", "file:///work/a")
    b = _client(daemon, "b", "file:///work/b")

    a.request("test/warn", {"scope": "own"})
    b.request("test/warn", {"scope": "workspace", "uri": "file:///work/a"})

    assert _told(a) == [(2, "tokend: your request was odd"), (1, "tokend: bad .tokend.toml")]
    assert _told(a_too) == [(1, "tokend: bad .tokend.toml")]
    assert _told(b) == []


def test_the_daemons_own_problems_reach_every_client(daemon: InProcessDaemon) -> None:
    clients = [_client(daemon, name, None) for name in ("x", "y")]
    clients[0].request("test/warn", {"scope": "daemon"})
    for client in clients:
        assert _told(client) == [(2, "tokend: the daemon is unwell")]


def test_settings_warnings_pop_up_once_for_the_workspaces_clients(daemon: InProcessDaemon) -> None:
    a = _client(daemon, "a", "file:///work/a")
    b = _client(daemon, "b", "file:///work/b")
    warnings = ["/work/a/.tokend.toml: log_level = 'loud' is invalid", "/work/a/.tokend.toml: x"]
    b.request("test/warn", {"scope": "settings", "uri": "file:///work/a", "warnings": warnings})
    assert _told(a) == [(2, f"tokend: config: {w}") for w in warnings]
    assert [n["params"] for n in a.notifications if n["method"] == "window/showMessage"] == [
        {"type": 2, "message": f"tokend: {warnings[0]} (and 1 more: see `tokend config`)"}
    ]
    assert _told(b) == []
    assert [n for n in b.notifications if n["method"] == "window/showMessage"] == []
