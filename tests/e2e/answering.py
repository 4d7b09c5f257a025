"""A test client that answers the server's own requests (tests/e2e/rpc.py only receives them).

`answers[method]` is an async function of the request's params returning the result, or
raising AnswerError to reply with a JSON-RPC error. Requests it has no answer for are queued
with the notifications, as before.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from tests.e2e.rpc import ProcessClient

Answer = Callable[[Any], Awaitable[Any]]


class AnswerError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Intercepting(asyncio.Queue):  # type: ignore[type-arg]
    def __init__(self, client: AnsweringClient) -> None:
        super().__init__()
        self._client = client

    async def put(self, body: dict[str, Any]) -> None:
        if "id" in body and body.get("method") in self._client.answers:
            self._client.asked.append(body)
            task = asyncio.create_task(self._client.answer(body))
            self._client._tasks.add(task)
            task.add_done_callback(self._client._tasks.discard)
            return
        await super().put(body)


class AnsweringClient(ProcessClient):
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        super().__init__(proc)
        self.answers: dict[str, Answer] = {}
        self.asked: list[dict[str, Any]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.notifications = _Intercepting(self)

    async def answer(self, body: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": body["id"]}
        try:
            reply["result"] = await self.answers[body["method"]](body.get("params"))
        except AnswerError as error:
            reply["error"] = {"code": error.code, "message": error.message}
        data = json.dumps(reply).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(data) + data)
