"""The HTTP summarizer (adapters.model_http, on httpx) against real servers on 127.0.0.1.

Oracles: what the server saw (a request arriving, its connection closing, the headers and body
it read) and the reasons the summarizer chain reports (protocol.md: a timeout, an HTTP error, a
reply that is not JSON move the chain on), spelled as the urllib writer spelled them.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tokend.adapters.model_http import HttpWriter
from tokend.core.errors import SummaryFailed

PROMPT = 5.0  # seconds: what "at once" means on a shared, loaded machine
KEY_ENV = "TOKEND_TEST_MODEL_HTTP_KEY"


class Holding:
    """Reads one request whole, never answers, and records when the client closed the
    connection (monotonic seconds)."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.closed_at: float | None = None
        self.closed = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        conn, _ = self._sock.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            self.arrived.set()
            conn.settimeout(60)
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            self.closed_at = time.monotonic()
            self.closed.set()

    def close(self) -> None:
        self._sock.close()


async def test_cancelling_a_write_closes_its_connection_at_once():
    server = Holding()
    writer = HttpWriter("openai", server.base_url, "holding", KEY_ENV, 60)
    task = asyncio.create_task(writer.write("summarize this", 256))
    try:
        assert await asyncio.to_thread(server.arrived.wait, 30), "no request arrived"
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(server.closed.wait, PROMPT), "the connection stayed open"
        assert server.closed_at is not None and server.closed_at - cancelled_at < PROMPT
    finally:
        server.close()


class Answering(BaseHTTPRequestHandler):
    """The model named in the request picks the answer; every request is kept on the server."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, dict(self.headers), body))  # type: ignore[attr-defined]
        model = body["model"]
        if model == "slow":
            time.sleep(3)
        status, data = {
            "no-key": (401, b""),
            "boom": (500, b'{"error": "the model is overloaded"}'),
            "silent-500": (500, b""),
            "html": (200, b"<html>502 bad gateway</html>"),
            "no-choices": (200, b'{"id": "x"}'),
        }.get(model, (200, json.dumps(answer_for(model)).encode()))
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the writer gave up (the slow model)


def answer_for(model: str) -> dict[str, Any]:
    if model.startswith("claude"):
        return {"content": [{"type": "text", "text": f"{model} wrote"}], "stop_reason": "end_turn"}
    finish = "length" if model == "cut" else "stop"
    return {"choices": [{"message": {"content": f"{model} wrote"}, "finish_reason": finish}]}


@pytest.fixture
def served():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answering)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


async def failure(base_url: str, model: str, timeout_s: float = 10) -> str:
    with pytest.raises(SummaryFailed) as failed:
        await HttpWriter("openai", base_url, model, KEY_ENV, timeout_s).write("p", 300)
    return failed.value.reason


async def test_answers_and_the_requests_that_asked_for_them(served, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    port = served.server_address[1]
    openai = HttpWriter("openai", f"http://127.0.0.1:{port}/v1/", "gpt-x", KEY_ENV, 10)
    anthropic = HttpWriter("anthropic", f"http://127.0.0.1:{port}", "claude-x", KEY_ENV, 10)
    assert await openai.write("summarize A", 300) == "gpt-x wrote"
    assert await anthropic.write("summarize B", 400) == "claude-x wrote"
    (path_a, headers_a, body_a), (path_b, headers_b, body_b) = served.seen
    assert path_a == "/v1/chat/completions" and headers_a["Authorization"] == "Bearer sk-test"
    assert body_a == {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": "summarize A"}],
        "max_tokens": 300,
        "temperature": 0,
    }
    assert path_b == "/v1/messages" and headers_b["x-api-key"] == "sk-test"
    assert headers_b["anthropic-version"] == "2023-06-01"
    assert body_b["max_tokens"] == 400 and body_b["model"] == "claude-x"


async def test_each_failure_is_a_reason_the_chain_reports(served, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    base = f"http://127.0.0.1:{served.server_address[1]}/v1"
    assert await failure(base, "no-key") == f"HTTP 401 (Unauthorized; {KEY_ENV} is not set)"
    assert await failure(base, "boom") == 'HTTP 500 ({"error": "the model is overloaded"})'
    assert await failure(base, "silent-500") == "HTTP 500 (Internal Server Error)"
    assert await failure(base, "html") == "the answer is not JSON"
    assert await failure(base, "no-choices") == "no choices[0].message.content in the answer"
    assert await failure(base, "cut") == "the answer was cut at maxTokens"
    assert await failure(base, "slow", timeout_s=0.5) == "no answer within 0.5 s"
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    closed.close()  # nothing listens there
    assert await failure(dead, "any") == f"cannot reach {dead} ([Errno 111] Connection refused)"


def test_the_daemon_starts_without_importing_httpx() -> None:
    """httpx is imported at the first summary a model writes, not when `tokend serve` starts:
    its import also loads its command line's rich and click (about 80 modules), which made the
    daemon 1.2x slower to be ready (bench/reshape.py). Oracle: a fresh interpreter's
    sys.modules after importing what `tokend serve` imports before it is ready."""
    import subprocess
    import sys

    probe = (
        "import sys; import tokend.daemon.main, tokend.lsp.server, tokend.service.app;"
        " print(sorted(m for m in ('httpx', 'rich', 'click') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", out.stdout
