"""`tokend status --daemon`: asks the running daemon for daemon/status over its unix socket
(initialize, daemon/status, shutdown, exit) and prints it; never starts one."""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from typing import Any, TextIO

from tokend.adapters.rendezvous import connect_unix
from tokend.daemon.paths import socket_path


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
    hello = {"processId": None, "capabilities": {}, "clientInfo": {"name": "tokend status"}}
    calls = ((1, "initialize", hello), (2, "daemon/status", None), (3, "shutdown", None))
    for msg_id, method, params in calls:
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
