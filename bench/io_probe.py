"""bench/io's measurements in one process, on whichever tokend is first on PYTHONPATH (this
tree's or the baseline's): `python -m bench.io_probe http|follow SESSION_FILE`, JSON on stdout.

http    the summarizer's HTTP writer against a model server on 127.0.0.1 (a process of its
        own, answering at once): CALLS sequential calls (ms each); CONCURRENT calls at once
        (wall ms, and the most threads the process had meanwhile); CANCELS calls cancelled once
        the server has read the request (ms from the cancel to the server seeing the
        connection closed).
follow  a daemon's followers (service level, a temporary SQLite store): ROUNDS records appended
        to a followed transcript (ms from the write to the record read), then ROUNDS new
        transcripts in a followed sessions folder (ms from the first write to its follower).
        Run it where inotify cannot start (bench/io does, in a user namespace) to measure the
        polling fallback; a tree without one reports the error it got.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CALLS = 200
CONCURRENT = 16
CANCELS = 10
ROUNDS = 15
PAUSE_S = 0.3  # between rounds: each write is its own event


def _writer_class() -> Any:
    try:
        from tokend.adapters.model_http import HttpWriter
    except ImportError:  # before the adapter: the urllib writer inside the service
        from tokend.service.compaction.summarizers import HttpWriter  # type: ignore[attr-defined,no-redef]
    return HttpWriter


ANSWERING = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # many connects at once: none dropped (a 1 s SYN retry)

class Answer(BaseHTTPRequestHandler):
    body = json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]})

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        data = self.body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = Server(("127.0.0.1", 0), Answer)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextlib.contextmanager
def _answering() -> Iterator[str]:
    """A model server answering at once, in a process of its own (as a real one is): its URL."""
    proc = subprocess.Popen([sys.executable, "-c", ANSWERING], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"
    finally:
        proc.kill()
        proc.wait()


def _holding_server(arrived: list[float], closed: list[float]) -> socket.socket:
    """Reads each request, never answers, records when the client closed (monotonic s)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            arrived.append(time.monotonic())
            conn.settimeout(30)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            closed.append(time.monotonic())

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


async def http() -> dict[str, Any]:
    writer_class = _writer_class()
    with _answering() as url:
        figures = await _calls(writer_class("openai", url, "m", "X", 30))
    figures.update(await _cancels(writer_class))
    return figures


async def _calls(writer: Any) -> dict[str, Any]:
    for _ in range(5):  # warm up
        await writer.write("summarize", 256)
    calls = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await writer.write("summarize", 256)
        calls.append((time.perf_counter() - started) * 1000)
    idle_threads = peak = threading.active_count()
    sampling = True

    async def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, threading.active_count())
            await asyncio.sleep(0.001)

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    await asyncio.gather(*(writer.write("summarize", 256) for _ in range(CONCURRENT)))
    concurrent_ms = (time.perf_counter() - started) * 1000
    sampling = False
    await sampler
    return {
        "call_ms": statistics.median(calls),
        "call_p95_ms": statistics.quantiles(calls, n=20)[-1],
        "concurrent_ms": concurrent_ms,
        "extra_threads": peak - idle_threads,
    }


async def _cancels(writer_class: Any) -> dict[str, Any]:
    arrived: list[float] = []
    closed: list[float] = []
    listener = _holding_server(arrived, closed)
    base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    cancel_ms = []
    for i in range(CANCELS):
        task = asyncio.create_task(writer_class("openai", base, "m", "X", 30).write("s", 256))
        while len(arrived) <= i:
            await asyncio.sleep(0.001)
        cancelled = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        deadline = time.monotonic() + 10
        while len(closed) <= i and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        cancel_ms.append((closed[i] - cancelled) * 1000 if len(closed) > i else float("inf"))
    listener.close()
    return {"cancel_ms": statistics.median(cancel_ms), "cancel_max_ms": max(cancel_ms)}


async def _until(done: Any, timeout: float = 10.0) -> float:
    """ms until `done()` holds (inf when it never did within `timeout`)."""
    started = time.perf_counter()
    while not done():
        if time.perf_counter() - started > timeout:
            return float("inf")
        await asyncio.sleep(0.002)
    return (time.perf_counter() - started) * 1000


def _followers(followers: Any, service: Any) -> Any:
    """The followers of `service`, handed their watch as the app does (a tree before the
    composition root handed it in builds its own)."""
    try:
        from tokend.adapters.watch import PathWatch

        return followers(service, watch=PathWatch)
    except TypeError:
        return followers(service)


async def follow(session_file: Path) -> dict[str, Any]:
    from tokend.service.app import open_service
    from tokend.service.transcripts.followers import Followers

    lines = [line for line in session_file.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        os.environ["CLAUDE_CONFIG_DIR"] = str(base / "claude")
        project = base / "claude" / "projects" / "-bench-app"
        project.mkdir(parents=True)
        service = open_service(None, f"sqlite:///{base}/follow.sqlite3")
        followers = _followers(Followers, service)
        path = base / "transcript.jsonl"
        path.write_text("\n".join(lines[:2]) + "\n")
        try:
            status = await followers.start("claude-code", str(path))
        except OSError as error:
            service.close()
            return {"error": f"follow/start: {type(error).__name__}: {error}"}
        appended = []
        for line in lines[2 : 2 + ROUNDS]:
            tail = followers._running[path.resolve()].tail
            before = len(tail.records)
            with path.open("a") as stream:
                stream.write(line + "\n")
            appended.append(await _until(lambda t=tail, n=before: len(t.records) > n))
            await asyncio.sleep(PAUSE_S)
        folder = await followers.start("claude-code")
        found = []
        for n in range(ROUNDS):
            count = len(followers.list()[-1].transcripts)
            (project / f"s{n}.jsonl").write_text(lines[0] + "\n")
            found.append(await _until(lambda c=count: len(followers.list()[-1].transcripts) > c))
            await asyncio.sleep(PAUSE_S)
        followers.close()
        service.close()
        del status, folder
    return {"append_ms": statistics.median(appended), "new_transcript_ms": statistics.median(found)}


def main(argv: list[str]) -> int:
    mode = argv[0]
    result = asyncio.run(http() if mode == "http" else follow(Path(argv[1])))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
