"""`tokend serve` and `tokend status --daemon`: the daemon around the shared TokendService."""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, TextIO

from lsprotocol import types

from tokend.daemon.conn import Connection, Registry
from tokend.daemon.listener import run_daemon
from tokend.daemon.paths import socket_path
from tokend.daemon.spawn import connect_unix


class DaemonHost:
    """ServerHost for one daemon connection: its slot in the registry, the daemon's status."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def status(self) -> dict[str, Any]:
        return self._conn.daemon.status()

    def attached(self, session_id: str | None, client_name: str | None) -> None:
        self._conn.session_id = session_id
        if client_name and not self._conn.client_name:
            self._conn.client_name = client_name

    def busy(self) -> AbstractContextManager[None]:
        return self._conn.daemon.busy()

    def notify_others(self, method: str, params: Any, session_id: str) -> None:
        self._conn.registry.notify_all(method, params, session_id=session_id, exclude=self._conn)


class ClientLogHandler(logging.Handler):
    """Forwards the daemon's warnings and errors to every client as window/logMessage."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.registry: Registry | None = None
        self._sending = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.registry is None or self._sending or record.name.startswith("pygls"):
            return
        if threading.current_thread() is not threading.main_thread():
            return  # the registry belongs to the event loop's thread
        kind = (
            types.MessageType.Error
            if record.levelno >= logging.ERROR
            else types.MessageType.Warning
        )
        self._sending = True
        try:
            params = {"type": kind.value, "message": f"tokend: {record.getMessage()}"}
            self.registry.notify_all("window/logMessage", params)
        except Exception:  # a log line must never break the daemon
            pass
        finally:
            self._sending = False


def serve_forever(args: argparse.Namespace) -> int:
    from tokend.lsp.server import create_server
    from tokend.service.factory import build_service

    service = build_service(None, args.database_url)

    to_clients = ClientLogHandler()
    logging.getLogger("tokend").addHandler(to_clients)

    def connection_factory(conn: Connection) -> Any:
        to_clients.registry = conn.registry
        server = create_server(service, DaemonHost(conn))
        conn.add_close_callback(server.unwatch_all)  # an editor may vanish without shutdown
        return server

    def ready(addresses: list[str]) -> None:
        sys.stderr.write(f"tokend {_version()}: listening on {', '.join(addresses)}\n")
        sys.stderr.write("tokend: ready\n")
        sys.stderr.flush()

    idle = args.idle_timeout if args.idle_timeout is not None else service.config.idle_timeout_s
    try:
        return run_daemon(
            args.listen,
            connection_factory=connection_factory,
            ready=ready,
            idle_timeout=idle if idle > 0 else None,
            log_level=args.log_level,
            name=args.name,
        )
    finally:
        logging.getLogger("tokend").removeHandler(to_clients)
        service.close()


def _version() -> str:
    import tokend

    return tokend.__version__


def print_daemon_status(args: argparse.Namespace, out: TextIO) -> int:
    """Ask the running daemon for daemon/status; never starts one."""
    path = socket_path(getattr(args, "name", None))
    try:
        with connect_unix(path, timeout=5) as sock:
            status = _request_status(sock)
    except OSError as exc:
        out.write(f"no tokend daemon answers at {path} ({exc.strerror or exc})\n")
        return 1
    if args.json:
        out.write(json.dumps(status) + "\n")
        return 0
    out.write(
        f"tokend {status['version']}  pid {status['pid']}  up {status['uptimeSeconds']:.0f} s  "
        f"{len(status['connections'])} connections  {len(status['sessions'])} sessions loaded\n"
    )
    for conn in status["connections"]:
        out.write(
            f"  connection {conn['id']}: {conn.get('clientName') or '?'} "
            f"-> {conn.get('sessionId') or '(no session)'}\n"
        )
    for s in status["sessions"]:
        out.write(
            f"  session {s['sessionId']}: {s['model']} {s['usedTokens']:,} tokens "
            f"({s['usedPercentage']:.1f}%), {s['connections']} attached\n"
        )
    return 0


def _request_status(sock: socket.socket) -> dict[str, Any]:
    frames = _frames(sock)
    status: dict[str, Any] = {}
    for msg_id, method, params in (
        (
            1,
            "initialize",
            {"processId": None, "capabilities": {}, "clientInfo": {"name": "tokend status"}},
        ),
        (2, "daemon/status", None),
        (3, "shutdown", None),
    ):
        _send(sock, {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        reply = next(body for body in frames if body.get("id") == msg_id)
        if "error" in reply:
            raise OSError(reply["error"].get("message", "daemon/status failed"))
        if method == "daemon/status":
            status = reply["result"]
    _send(sock, {"jsonrpc": "2.0", "method": "exit"})
    return status


def _send(sock: socket.socket, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(data) + data)


def _frames(sock: socket.socket) -> Iterator[dict[str, Any]]:
    stream = sock.makefile("rb")
    while True:
        length = 0
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if not line:
            raise OSError("the daemon closed the connection")
        yield json.loads(stream.read(length))
