"""What a misbehaving connection costs a good one, on the real `tokend serve`.

Measured in one run, on this checkout and on the daemon before per-connection limits
(BEFORE_REV), each a real daemon on a private temp dir (unix socket + loopback TCP):
  idle     `budget/snapshot` round trips on a good connection, nothing else going on
  flood    the same while 10,000 malformed frames of 25 kinds arrive on 4 connections (2 unix,
           2 unauthenticated TCP), each reconnecting when the daemon closes it
  unread   the same while one client sends 40,000 `budget/snapshot` requests and reads no reply
The abusers run in processes of their own (`python -m bench.abuse flood|unread ...`), so their
work never delays the measuring client. Reported: the good connection's p50 / p99 / max, the
daemon's RSS before and after the flood, the connections still open 5 s after the flood, and
whether the unread client was cut.

`python -m bench.abuse` prints the section.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from bench.daemon import _Client, _env, _p, _Processes, _rss_mib, _unix_client

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REV = "07f3632"  # main just before the daemon read frames itself (backpressure, limits)
FLOOD_FRAMES = 10_000
FLOOD_CONNECTIONS = 4
UNREAD_REQUESTS = 40_000
UNREAD_SECONDS = 10.0  # the good connection is measured this long while the client does not read
IDLE_ROUND_TRIPS = 1000
LEFT_OPEN_AFTER_S = 5.0


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _call(method: str, params: Any, msg_id: Any = 7, version: str = "2.0") -> bytes:
    return _frame(
        json.dumps({"jsonrpc": version, "id": msg_id, "method": method, "params": params}).encode()
    )


def malformed_frames() -> list[bytes]:
    """25 kinds: broken framing (the daemon should hang up), bad bodies, bad envelopes, bad
    params, and a frame whose body never comes."""
    deep = b"[" * 5000 + b"]" * 5000
    return [
        b"\x00\xff garbage without any header\r\n",
        b"Content-Length: nope\r\n\r\n{}",
        b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"\r\n\r\n{}",
        b"X" * 5000 + b"\r\n",
        b"Content-Length: 10\r\n" * 20 + b"\r\n",
        _frame(b"{not json"),
        _frame(b"\xc3\x28\xa0\xa1"),
        _frame(b"[1,2,3]"),
        _frame(b'"a string"'),
        _frame(b""),
        _frame(b'{"hello": 1}'),
        _call("daemon/status", None, version="1.0"),
        _call("daemon/status", None, msg_id={"an": "object"}),
        _frame(b'{"jsonrpc": "2.0", "id": 3}'),
        _frame(b'{"jsonrpc": "2.0", "id": 3, "method": 42}'),
        _frame(b'{"jsonrpc": "2.0", "id": 9, "method": "session/append", "params": ' + deep + b"}"),
        _call("session/append", "not an object"),
        _call("session/append", {"sessionId": "x", "message": {"role": "robot", "parts": []}}),
        _call("budget/snapshot", {}),
        _call("context/assemble", {"sessionId": "x", "format": "xml"}),
        _call("no/such/method", None),
        _frame(b'{"jsonrpc": "2.0", "method": "session/append", "params": 3}'),
        _call("initialize", "malformed"),
        b"Content-Length: 999999999\r\n\r\n" + b"{" * 1000,  # a body that never comes: cut
    ]


# -- the abusers (each in a process of its own) ---------------------------------------------


def _connect(kind: str, target: str) -> socket.socket:
    if kind == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(target)
    else:
        sock = socket.create_connection(("127.0.0.1", int(target)))
    threading.Thread(target=_discard, args=(sock,), daemon=True).start()
    return sock


def _discard(sock: socket.socket) -> None:
    try:
        while sock.recv(1 << 16):
            pass
    except OSError:
        pass


def flood(unix_path: str, tcp_port: str) -> None:
    """FLOOD_FRAMES malformed frames over FLOOD_CONNECTIONS connections, reconnecting when
    closed; prints "done", then keeps the last connections open until stdin closes."""
    kinds = malformed_frames()
    targets = [("unix", unix_path), ("tcp", tcp_port)] * (FLOOD_CONNECTIONS // 2)
    sockets = [_connect(kind, target) for kind, target in targets]
    initialize = _call("initialize", {"processId": None, "capabilities": {}}, msg_id=0)
    for n in range(FLOOD_FRAMES):
        slot = n % len(sockets)
        if n == slot and targets[slot][0] == "unix":
            sockets[slot].sendall(initialize)
        kind = (n // len(sockets)) % len(kinds)
        try:
            sockets[slot].sendall(kinds[kind])
            cut = kind == len(kinds) - 1  # the body that never comes: hang up mid-frame
        except OSError:
            cut = True
        if cut:
            sockets[slot].close()
            sockets[slot] = _connect(*targets[slot])
            if targets[slot][0] == "unix":
                try:
                    sockets[slot].sendall(initialize)
                except OSError:
                    pass
    for slot, sock in enumerate(sockets):  # end each with broken framing, and stay connected
        try:
            sock.sendall(b"this is not a header\r\n")
        except OSError:
            sockets[slot] = _connect(*targets[slot])
    print("done", flush=True)
    sys.stdin.read()


def unread(unix_path: str) -> None:
    """Initialize, then UNREAD_REQUESTS requests, never reading a reply; prints "sent all"
    once the daemon took them all, or "cut" if it hung up."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(unix_path)
    sock.sendall(_call("initialize", {"processId": None, "capabilities": {}}, msg_id=0))
    batch = b"".join(_call("daemon/status", None, msg_id=n) for n in range(1, 1001))
    try:
        for _ in range(UNREAD_REQUESTS // 1000):
            sock.sendall(batch)
    except OSError:
        print("cut", flush=True)
        return
    print("sent all", flush=True)
    time.sleep(3600)


# -- the measuring side -----------------------------------------------------------------------


def _round_trips(client: _Client, session_id: str, until: Any) -> list[float]:
    samples = []
    while not until(len(samples)):
        started = time.perf_counter()
        client.request("budget/snapshot", {"sessionId": session_id})
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _abuser(tree: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.abuse", *args],
        cwd=ROOT,
        env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{tree}"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _line_ready(proc: subprocess.Popen[str]) -> bool:
    assert proc.stdout is not None
    return bool(select.select([proc.stdout], [], [], 0)[0])


def _one_daemon(tree: Path) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkab-"))  # short: unix socket paths max ~104 bytes
    env = {**_env(base), "PYTHONPATH": str(tree)}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    try:
        daemon, text = procs.serve(
            "--listen", f"unix:{sock}", "--listen", "tcp:127.0.0.1:0", "--idle-timeout", "0"
        )
        port = text.split("tcp:127.0.0.1:")[1].split()[0].rstrip(",")
        good = _unix_client(sock, "good")
        session_id = good.request("session/create", {"model": "gpt-4o"})["sessionId"]
        message = {"role": "user", "parts": [{"type": "text", "text": "hello there"}]}
        good.request("session/append", {"sessionId": session_id, "message": message})
        idle = _round_trips(good, session_id, lambda n: n >= IDLE_ROUND_TRIPS)
        time.sleep(0.5)
        rss_before = _rss_mib(daemon.pid)

        flooder = _abuser(tree, env, "flood", str(sock), port)
        flooded = _round_trips(good, session_id, lambda n: _line_ready(flooder))
        time.sleep(LEFT_OPEN_AFTER_S)
        left_open = len(good.request("daemon/status")["connections"]) - 1
        rss_after = _rss_mib(daemon.pid)
        flooder.kill()
        flooder.wait()

        hog = _abuser(tree, env, "unread", str(sock))
        ends = time.monotonic() + UNREAD_SECONDS
        unread_samples = _round_trips(good, session_id, lambda n: time.monotonic() > ends)
        rss_unread = _rss_mib(daemon.pid)
        assert hog.stdout is not None
        hog_said = hog.stdout.readline().strip() if _line_ready(hog) else "still sending"
        hog.kill()
        hog.wait()
        good.close()
        return {
            "idle": idle,
            "flood": flooded,
            "unread": unread_samples,
            "rss_before": rss_before,
            "rss_after": rss_after,
            "left_open": left_open,
            "rss_unread": rss_unread,
            "hog": {
                "cut": "cut",
                "sent all": "all 40,000 read; replies queued",
                "still sending": "paused: its requests wait in its socket",
            }.get(hog_said, hog_said),
        }
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def _tree_at(rev: str) -> Path | None:
    """server/ of `rev`, extracted to a temp dir (None when this clone lacks the commit)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "server"], capture_output=True, check=False
    )
    if archive.returncode:
        return None
    target = Path(tempfile.mkdtemp(prefix="tokend-before-"))
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target


def _row(name: str, r: dict[str, Any], phase: str) -> str:
    samples = r[phase]
    return (
        f"| {name} | {phase} | {len(samples):,} | {_p(samples, 50):.2f} | {_p(samples, 99):.2f} | "
        f"{max(samples):.1f} |"
    )


def run() -> str:
    ours = _one_daemon(ROOT / "server")
    before_tree = _tree_at(BEFORE_REV)
    before = None
    if before_tree is not None:
        try:
            before = _one_daemon(before_tree / "server")
        finally:
            shutil.rmtree(before_tree, ignore_errors=True)
    runs = [("tokend", ours)] + ([(f"before ({BEFORE_REV})", before)] if before else [])
    lines = [
        "### Abuse: what a misbehaving connection costs a good one (bench/abuse.py)\n",
        "A good connection sends `budget/snapshot` back to back (ms per round trip) while another",
        f"client floods {FLOOD_FRAMES:,} malformed frames of {len(malformed_frames())} kinds on "
        f"{FLOOD_CONNECTIONS} connections (2 unix, 2 unauthenticated TCP), then while a client "
        f"sends {UNREAD_REQUESTS:,} requests and reads no reply ({UNREAD_SECONDS:.0f} s). Same "
        f"run: the daemon before the per-connection limits ({BEFORE_REV}).\n",
        "| daemon | phase | round trips | p50 | p99 | max |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, r in runs:
        lines += [_row(name, r, phase) for phase in ("idle", "flood", "unread")]
    lines += [
        "",
        "| daemon | RSS before the flood | after it | connections open 5 s after it | "
        "the unread client | RSS with it |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for name, r in runs:
        lines.append(
            f"| {name} | {r['rss_before']:.1f} MiB | {r['rss_after']:.1f} MiB "
            f"({r['rss_after'] - r['rss_before']:+.1f}) | {r['left_open']} | {r['hog']} | "
            f"{r['rss_unread']:.1f} MiB |"
        )
    flood_max, unread_p99 = max(ours["flood"]), _p(ours["unread"], 99)
    lines += [
        "",
        f"Goals: the good connection's max wait during the flood <= 250 ms "
        f"({'met' if flood_max <= 250 else '**missed**'}: {flood_max:.1f} ms); RSS after <= before "
        f"+ 20 MB ({'met' if ours['rss_after'] - ours['rss_before'] <= 20 else '**missed**'}); "
        f"no broken connection open past 5 s ({'met' if ours['left_open'] == 0 else '**missed**'}); "
        f"p99 while a client does not read: {unread_p99:.2f} ms vs idle {_p(ours['idle'], 99):.2f} ms.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv and argv[0] == "flood":
        flood(argv[1], argv[2])
    elif argv and argv[0] == "unread":
        unread(argv[1])
    else:
        print(run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
