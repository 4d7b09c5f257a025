"""Unauthenticated TCP clients against an authenticated one, on the real `tokend serve`.

INTRUDERS processes each send `worst_frame()` on a new TCP connection, again and again
(`python -m bench.preauth intrude PORT`), while an authenticated TCP client sends
`budget/snapshot` back to back; `pre_auth_daemon` returns its round trips idle and attacked.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.baseline import ROOT
from bench.daemon import _Client, _env, _Processes

PRE_AUTH_LEVELS = 42_000  # objects this deep fill a frame just under the 256 KiB limit
INTRUDERS = 3
PHASE_S = 10.0  # idle, then attacked: round trips back to back for this long each


def worst_frame() -> bytes:
    """The costliest frame the pre-authentication limit let through before: an `initialize`
    whose params nest objects 42,000 levels deep, no id (the scan for one read it all)."""
    deep = b'{"a":' * PRE_AUTH_LEVELS + b"1" + b"}" * PRE_AUTH_LEVELS
    body = b'{"jsonrpc":"2.0","method":"initialize","params":%s}' % deep
    assert len(body) < 256 << 10
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def intrude(port: str) -> None:
    """Send worst_frame() on a new TCP connection, again and again, until stdin closes; prints
    how many were sent."""
    frame, sent = worst_frame(), 0
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print("ready", flush=True)
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", int(port))) as sock:
                sock.sendall(frame)
                while sock.recv(1 << 16):
                    pass
            sent += 1
        except OSError:
            time.sleep(0.01)
    print(sent, flush=True)


def _tcp_client(port: int, token: str) -> Any:
    sock = socket.create_connection(("127.0.0.1", port))
    client = _Client(sock.fileno(), sock.fileno(), sock)
    params = {"processId": None, "capabilities": {}, "clientInfo": {"name": "good"},
              "initializationOptions": {"authToken": token}}  # fmt: skip
    client.request("initialize", params)
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return client


def pre_auth_daemon(server_dir: Path) -> dict[str, Any]:
    """An authenticated TCP client's `budget/snapshot` round trips, idle and while INTRUDERS
    unauthenticated clients send worst_frame() over and over."""
    base = Path(tempfile.mkdtemp(prefix="tkpa-"))
    env = {**_env(base), "PYTHONPATH": str(server_dir)}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    intruders: list[subprocess.Popen[str]] = []
    try:
        daemon, text = procs.serve(
            "--listen", f"unix:{sock}", "--listen", "tcp:127.0.0.1:0", "--idle-timeout", "0"
        )
        port = int(text.split("tcp:127.0.0.1:")[1].split()[0].rstrip(","))
        token = (base / "run" / "tokend" / "token").read_text().strip()
        good = _tcp_client(port, token)
        session_id = good.request("session/create", {"model": "gpt-4o"})["sessionId"]

        def round_trips(seconds: float = PHASE_S) -> list[float]:
            samples: list[float] = []
            ends = time.monotonic() + seconds
            while time.monotonic() < ends:
                began = time.perf_counter()
                good.request("budget/snapshot", {"sessionId": session_id})
                samples.append((time.perf_counter() - began) * 1000)
            return samples

        round_trips(1.0)  # warm-up
        idle = round_trips()
        for _ in range(INTRUDERS):
            intruders.append(subprocess.Popen(
                [sys.executable, "-m", "bench.preauth", "intrude", str(port)], cwd=ROOT,
                env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{server_dir}"},
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))  # fmt: skip
        for intruder in intruders:
            assert intruder.stdout is not None
            intruder.stdout.readline()
        time.sleep(1.0)
        attacked = round_trips()
        frames = 0
        for intruder in intruders:
            assert intruder.stdin is not None and intruder.stdout is not None
            intruder.stdin.close()
            frames += int(intruder.stdout.readline() or 0)
        good.close()
        return {"idle": idle, "attacked": attacked, "frames": frames}
    finally:
        for intruder in intruders:
            intruder.kill()
            intruder.wait()
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__" and sys.argv[1:2] == ["intrude"]:
    intrude(sys.argv[2])
