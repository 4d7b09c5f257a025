"""The per-user daemon's transport: what one shared daemon costs an editor, against stdio.

Measured in one run, with the same small pygls echo server in every case:
  stdio        the server as a child process on a pipe (what `tokend lsp --standalone` is)
  unix socket  a client on the daemon's socket
  forwarder    the editor's real path: pipe -> `tokend lsp` forwarder -> socket -> daemon
Then a notification fanned out by the daemon to 8 attached clients, and the daemon's RSS.

`python -m bench.daemon` prints the section; `--serve-unix PATH` / `--serve-stdio` are the
servers it starts.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUND_TRIPS = 2000
WARMUP = 200
FANOUT_CLIENTS = 8
FANOUT_ROUNDS = 300
CHURN_CONNECTIONS = 300


# -- the servers -------------------------------------------------------------------------------


def _make_server(conn: Any = None, own_converter: bool = False) -> Any:
    """A pygls server with bench/echo and bench/broadcast (to every other daemon connection)."""
    from pygls.lsp.server import LanguageServer
    from pygls.protocol import default_converter

    from tokend.daemon.conn import ConnectionProtocol, shared_converter

    class RawParamsProtocol(ConnectionProtocol):
        def structure_message(self, data: dict[str, Any]) -> Any:
            method = data.get("method")
            if "jsonrpc" in data and isinstance(method, str) and method.startswith("bench/"):
                from pygls.protocol.json_rpc import JsonRPCRequestMessage

                return JsonRPCRequestMessage(
                    data["id"], method, data["jsonrpc"], data.get("params")
                )
            return super().structure_message(data)

    server = LanguageServer(
        "bench",
        "0",
        protocol_cls=RawParamsProtocol,
        converter_factory=default_converter if own_converter else shared_converter,
    )

    @server.feature("bench/echo")
    def echo(ls: Any, params: Any) -> Any:
        return params

    @server.feature("bench/broadcast")
    def broadcast(ls: Any, params: Any) -> Any:
        return conn.registry.notify_all("bench/tick", params, exclude=conn)

    return server


def _serve_unix(path: str, own_converter: bool) -> None:
    import asyncio
    import functools

    from tokend.daemon.listener import Daemon, ListenAddress

    async def main() -> None:
        factory = functools.partial(_make_server, own_converter=own_converter)
        daemon = Daemon(factory, [ListenAddress("unix", path=Path(path))], idle_timeout=120)
        await daemon.start()
        await daemon.run()

    asyncio.run(main())


# -- a minimal blocking client -----------------------------------------------------------------


class _Client:
    def __init__(self, read_fd: int, write_fd: int, keep: Any) -> None:
        self.read_fd, self.write_fd, self.keep = read_fd, write_fd, keep
        self.buffer = b""
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        os.write(self.write_fd, b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def read(self) -> dict[str, Any]:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                header = self.buffer[:end].lower()
                length = int(header.split(b"content-length:")[1].split(b"\r\n")[0])
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4 : end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length :]
                    return json.loads(body)
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while "id" not in (reply := self.read()):
            pass
        return reply

    def initialize(self) -> None:
        self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})

    def close(self) -> None:
        if isinstance(self.keep, socket.socket):
            self.keep.close()
        else:
            self.keep.stdin.close()
            self.keep.wait(10)


def _unix_client(path: Path) -> _Client:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    return _Client(sock.fileno(), sock.fileno(), sock)


def _process_client(args: list[str]) -> _Client:
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    return _Client(proc.stdout.fileno(), proc.stdin.fileno(), proc)


# -- measurements ------------------------------------------------------------------------------


def _round_trips_ms(client: _Client) -> list[float]:
    payload = {"text": "hello", "n": 0}
    for _ in range(WARMUP):
        client.request("bench/echo", payload)
    samples = []
    for n in range(ROUND_TRIPS):
        payload["n"] = n
        started = time.perf_counter()
        client.request("bench/echo", payload)
        samples.append((time.perf_counter() - started) * 1000)
    client.close()
    return samples


def _fanout_ms(path: Path) -> tuple[list[float], list[float]]:
    """(time until all 8 got it, time until each got it) per broadcast, in ms."""
    listeners = [_unix_client(path) for _ in range(FANOUT_CLIENTS)]
    for listener in listeners:
        listener.initialize()
    sender = _unix_client(path)
    sender.initialize()
    by_fd = {listener.read_fd: listener for listener in listeners}
    all_ms, each_ms = [], []
    for round_number in range(FANOUT_ROUNDS + 20):
        started = time.perf_counter()
        sender.send(
            {
                "jsonrpc": "2.0",
                "id": round_number,
                "method": "bench/broadcast",
                "params": {"n": round_number},
            }
        )
        pending = set(by_fd)
        arrivals = []
        while pending:
            for fd in select.select(list(pending), [], [], 10)[0]:
                by_fd[fd].read()
                arrivals.append((time.perf_counter() - started) * 1000)
                pending.discard(fd)
        sender.read()  # the broadcast's own reply
        if round_number >= 20:  # warm-up rounds
            all_ms.append(max(arrivals))
            each_ms.extend(arrivals)
    for client in [*listeners, sender]:
        client.close()
    return all_ms, each_ms


def _churn_ms(path: Path) -> float:
    """Connections come and go (editors opening and closing): ms per connect + initialize +
    one request + close."""
    started = time.perf_counter()
    for n in range(CHURN_CONNECTIONS):
        client = _unix_client(path)
        client.initialize()
        client.request("bench/echo", {"n": n})
        client.close()
    return (time.perf_counter() - started) * 1000 / CHURN_CONNECTIONS


def _start_daemon(
    module: list[str], env: dict[str, str], path: Path, *extra: str
) -> subprocess.Popen[bytes]:
    daemon = subprocess.Popen(
        [*module, "--serve-unix", str(path), *extra], env=env, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 15
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    return daemon


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _p(samples: list[float], q: float) -> float:
    return (
        statistics.quantiles(samples, n=100, method="inclusive")[q - 1]
        if q != 50
        else statistics.median(samples)
    )


def run() -> str:
    python = sys.executable
    module = [python, "-m", "bench.daemon"]
    root = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    base = Path(tempfile.mkdtemp(prefix="tkdb-"))
    path = base / "d.sock"
    daemon = _start_daemon(module, env, path)
    peer_path = base / "peer.sock"
    peer = None
    try:
        rss_start = _rss_mib(daemon.pid)

        stdio_proc = subprocess.Popen(
            [*module, "--serve-stdio"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert stdio_proc.stdin is not None and stdio_proc.stdout is not None
        stdio_client = _Client(stdio_proc.stdout.fileno(), stdio_proc.stdin.fileno(), stdio_proc)
        stdio_client.initialize()
        stdio_rss = _rss_mib(stdio_proc.pid)
        stdio = _round_trips_ms(stdio_client)
        unix_client = _unix_client(path)
        unix_client.initialize()
        unix = _round_trips_ms(unix_client)
        forwarder_client = _process_client(
            [python, "-m", "tokend.daemon.forwarder", f"--remote=unix;{path}"]
        )
        forwarder_client.initialize()
        forwarder = _round_trips_ms(forwarder_client)
        fan_all, fan_each = _fanout_ms(path)
        time.sleep(0.5)
        rss_end = _rss_mib(daemon.pid)
        churn_ms = _churn_ms(path)
        time.sleep(0.5)
        rss_churn = _rss_mib(daemon.pid)
        peer = _start_daemon(module, env, peer_path, "--own-converter")
        peer_rss_start = _rss_mib(peer.pid)
        peer_churn_ms = _churn_ms(peer_path)
        time.sleep(0.5)
        peer_rss_churn = _rss_mib(peer.pid)
    finally:
        for process in (daemon, peer):
            if process is not None:
                process.kill()
                process.wait()
        shutil.rmtree(base, ignore_errors=True)

    base_p50 = _p(stdio, 50)
    rows = [
        ("stdio pipe to the server (baseline)", stdio),
        ("unix socket to the daemon", unix),
        ("editor path: pipe -> forwarder -> daemon", forwarder),
    ]
    lines = [
        "### Daemon transport: request round trip, fan-out, idle memory\n",
        "| path | p50 | p99 | p50 vs stdio |",
        "|---|---|---|---|",
        *(
            f"| {name} | {_p(s, 50):.3f} ms | {_p(s, 99):.3f} ms | {_p(s, 50) / base_p50:.2f}x |"
            for name, s in rows
        ),
        f"| fan-out: one notification, all {FANOUT_CLIENTS} clients have it | {_p(fan_all, 50):.3f} ms "
        f"| {_p(fan_all, 99):.3f} ms | |",
        f"| fan-out: per client | {_p(fan_each, 50):.3f} ms | {_p(fan_each, 99):.3f} ms | |",
        "",
        "| connection churn (connect, initialize, 1 request, close) | per connection | "
        f"daemon RSS growth over {CHURN_CONNECTIONS} |",
        "|---|---|---|",
        f"| one shared pygls converter (`shared_converter`) | {churn_ms:.1f} ms "
        f"| {rss_churn - rss_end:+.1f} MiB |",
        f"| pygls default: a converter per connection (peer) | {peer_churn_ms:.1f} ms "
        f"| {peer_rss_churn - peer_rss_start:+.1f} MiB |",
        "",
        f"Daemon RSS idle: {rss_start:.1f} MiB at start, {rss_end:.1f} MiB after the clients above "
        f"left (the same server on stdio with one client: {stdio_rss:.1f} MiB).",
        f"Round trip: {ROUND_TRIPS:,} sequential `bench/echo` requests (~40-byte params) after {WARMUP} warm-up, "
        "each client a separate process from the server, the same pygls echo server in every case. "
        f"Fan-out: {FANOUT_ROUNDS} broadcasts from a 9th client, timed from its send to each listener's "
        "receipt (select over 8 unix sockets in one process).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-unix"]:
        _serve_unix(sys.argv[2], "--own-converter" in sys.argv)
    elif sys.argv[1:2] == ["--serve-stdio"]:
        _make_server().start_io()
    else:
        print(run())
