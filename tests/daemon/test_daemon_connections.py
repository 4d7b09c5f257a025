"""Per-connection isolation, in process: a Daemon on a real unix socket in a background thread."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.lsp.server import LanguageServer

from tests.daemon.fixture import create_fixture_server
from tests.lsp_client import LspClient
from tokend.daemon.conn import Connection
from tokend.daemon.dispatch import INTERNAL_ERROR
from tokend.daemon.endpoints import ListenAddress
from tokend.daemon.listener import Daemon


class InProcessDaemon:
    def __init__(self, factory: Callable[[Connection], Any]) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="tkd-")) / "d.sock"
        self.daemon = Daemon(factory, [ListenAddress("unix", path=self.path)], idle_timeout=None)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.daemon.start()
        self._ready.set()
        await self.daemon.run()

    def call(self, function: Callable[[], Any]) -> Any:
        """Run `function` on the daemon's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(_call(function), self.loop).result(10)

    def client(self, name: str) -> LspClient:
        client = LspClient.unix(self.path)
        client.initialize(name)
        return client

    def __enter__(self) -> InProcessDaemon:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.daemon.stop()
        self._thread.join(10)
        shutil.rmtree(self.path.parent, ignore_errors=True)


async def _call(function: Callable[[], Any]) -> Any:
    return function()


def _factory_failing_first(first: Callable[[Connection], Any]) -> Callable[[Connection], Any]:
    calls = []

    def factory(conn: Connection) -> Any:
        calls.append(conn.id)
        return first(conn) if len(calls) == 1 else create_fixture_server(conn)

    return factory


def _raise(conn: Connection) -> Any:
    raise RuntimeError("the store is locked")


@pytest.fixture
def fixture_daemon() -> Iterator[InProcessDaemon]:
    with InProcessDaemon(create_fixture_server) as daemon:
        yield daemon


def test_a_server_that_fails_to_build_costs_only_its_connection() -> None:
    with InProcessDaemon(_factory_failing_first(_raise)) as daemon:
        broken = LspClient.unix(daemon.path)
        # The server is built for the first message, and fails: that request gets the error
        # (never a closed connection with nothing said), the next message builds it again.
        refused = broken.request("initialize", {})
        assert refused["error"]["code"] == INTERNAL_ERROR
        assert "the store is locked" in refused["error"]["message"]
        assert "traceback" not in (refused["error"].get("data") or {})
        assert daemon.client("editor").request("test/echo", 1)["result"]["echo"] == 1


def test_a_protocol_whose_exit_would_end_the_process_is_refused() -> None:
    plain_pygls = _factory_failing_first(lambda conn: LanguageServer("plain", "0"))
    with InProcessDaemon(plain_pygls) as daemon:
        risky = LspClient.unix(daemon.path)
        risky.send({"jsonrpc": "2.0", "method": "exit"})  # would sys.exit() the daemon
        assert daemon.client("editor").request("test/echo", 2)["result"]["echo"] == 2
        # The refused server is never used; the connection's next message builds another
        # (which, like any LSP server, serves requests once initialized).
        assert "result" in risky.initialize("risky")
        assert risky.request("test/echo", 3)["result"]["echo"] == 3


def test_exit_closes_only_the_connection_that_sent_it(fixture_daemon: InProcessDaemon) -> None:
    leaving, staying = fixture_daemon.client("leaving"), fixture_daemon.client("staying")
    leaving.request("shutdown")
    leaving.notify("exit")
    assert leaving.wait_closed()
    assert staying.request("test/echo", 3)["result"]["echo"] == 3
    assert [c.client_name for c in fixture_daemon.daemon.status().connections] == ["staying"]


def test_notify_all_reaches_only_the_clients_attached_to_that_session(
    fixture_daemon: InProcessDaemon,
) -> None:
    on_s1 = [fixture_daemon.client("a"), fixture_daemon.client("b")]
    on_s2 = fixture_daemon.client("c")
    for client in on_s1:
        client.request("test/attach", {"sessionId": "s1"})
    on_s2.request("test/attach", {"sessionId": "s2"})

    registry = fixture_daemon.daemon.registry
    sent = fixture_daemon.call(
        lambda: registry.notify_all("budget/didChange", {"v": 7}, session_id="s1")
    )
    assert sent == 2
    for client in on_s1:
        assert client.read_message() == {
            "jsonrpc": "2.0",
            "method": "budget/didChange",
            "params": {"v": 7},
        }
    on_s2.request("test/echo", "sync")  # anything sent before this reply would be here now
    assert on_s2.notifications == []
    sessions = {c.client_name: c.session_id for c in fixture_daemon.daemon.status().connections}
    assert sessions == {"a": "s1", "b": "s1", "c": "s2"}
