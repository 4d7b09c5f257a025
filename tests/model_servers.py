"""Real HTTP servers on 127.0.0.1, OpenAI- and Anthropic-shaped, for the summarizer chain.

The `model` named in a request picks the behaviour, so one server plays a whole fallback
chain: "good-*" answers a well-formed summary, "fail-500" an internal error, "slow" answers
after `slow_seconds` (past the summarizer's timeout), "not-json" a 200 with garbage,
"no-sections" prose without the sections, "empty" an empty text, "cut" a summary stopped at
max_tokens, "too-long" well-formed sections far over max_tokens, "long-*" well-formed sections using 85% of
max_tokens. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GOOD_ANSWER = (
    "## Objective\nShip the parser rewrite {model} without breaking the public API.\n"
    "## Decisions\nKeep the old entry point as a shim; the user vetoed a new dependency.\n"
    "## Work state\nDone: tokenizer. In progress: the grammar. Blocked: nothing.\n"
    "## Next step\nPort the expression rules and run the suite.\n"
)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # names lowercased
    body: dict[str, Any]


@dataclass
class ModelServer:
    provider: str  # "openai" | "anthropic"
    slow_seconds: float = 5.0
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        suffix = "/v1" if self.provider == "openai" else ""
        return f"http://{host}:{port}{suffix}"

    def start(self) -> ModelServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                headers = {k.lower(): v for k, v in self.headers.items()}
                owner.requests.append(Recorded(self.path, headers, body))
                status, payload = owner.answer(self.path, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the summarizer gave up on a slow answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        expected = "/v1/chat/completions" if self.provider == "openai" else "/v1/messages"
        if path != expected:
            return 404, {"error": f"no route {path}"}
        model = body["model"]
        if model == "fail-500":
            return 500, {"error": {"message": "internal error"}}
        if model == "not-json":
            return 200, b"<html>502 bad gateway</html>"
        if model == "slow":
            time.sleep(self.slow_seconds)
            return 200, self._shaped(GOOD_ANSWER.format(model=model), False)
        text = {
            "no-sections": "The user and the agent worked on a parser. It went well.",
            "empty": "",
            "cut": "## Objective\nShip the parser rewrite\n## Decisions\nKeep the",
            "too-long": GOOD_ANSWER.format(model=model) + "More detail. " * 20_000,
        }.get(model, GOOD_ANSWER.format(model=model))
        if model.startswith("long-"):  # well-formed, within max_tokens, using most of it
            words = int(self._max_tokens(body) * 0.85 / 3)
            text = GOOD_ANSWER.format(model=model) + "More detail. " * words
        return 200, self._shaped(text, model == "cut")

    @staticmethod
    def _max_tokens(body: dict[str, Any]) -> int:
        return int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)

    def _shaped(self, text: str, cut: bool) -> dict[str, Any]:
        if self.provider == "anthropic":
            return {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if cut else "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 10},
            }
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "length" if cut else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10},
        }
