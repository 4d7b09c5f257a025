"""The "client" summarizer's way back to the connection that asked for a compaction.

`session/summarize` {sessionId, prompt, maxTokens} is a request from the server to the client:
its agent or editor calls its own model and answers {summary}. The service gets a plain
callable (service.compaction.summarizers.AskClient) and never sees pygls.
"""

from __future__ import annotations

from typing import Any

from tokend.lsp.server import TokendServer
from tokend.lsp.wire import to_wire
from tokend.lsp.wire.compaction import SessionSummarizeParams
from tokend.service.compaction.summarizers import AskClient

SUMMARIZE = "session/summarize"


def ask_client(ls: TokendServer) -> AskClient:
    """Send session/summarize on this connection; the awaitable resolves to the answer."""

    async def ask(session_id: str, prompt: str, max_tokens: int) -> Any:
        params = to_wire(SessionSummarizeParams(session_id, prompt, max_tokens))
        return plain(await ls.protocol.send_request_async(SUMMARIZE, params))

    return ask


def plain(value: Any) -> Any:
    """A response's result as JSON values: pygls turns objects of results it has no type for
    into namedtuples; back to dicts (lists and scalars unchanged)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
