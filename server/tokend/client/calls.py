"""What the sync and async clients share: the error, `initialize`'s params, and the params of
the methods an agent calls every turn (protocol.md, For agent authors)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import tokend

Part = Mapping[str, Any]


class RpcError(Exception):
    """A JSON-RPC error reply: `code` and `data` as protocol.md's Errors table has them."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        self.code: int = int(error.get("code", 0))
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        super().__init__(f"{self.message} ({self.code})")


class ConnectionLost(ConnectionError):
    """The daemon closed the connection (or went away) before the reply came."""


def initialize_params(client_name: str, workspace_uri: str | None) -> dict[str, Any]:
    """An agent's `initialize`: no initializationOptions.session, so it follows its own sessions."""
    params: dict[str, Any] = {
        "processId": os.getpid(),
        "clientInfo": {"name": client_name, "version": tokend.__version__},
        "capabilities": {},
        "initializationOptions": {},
    }
    if workspace_uri is not None:
        params["rootUri"] = workspace_uri
        params["workspaceFolders"] = [
            {"uri": workspace_uri, "name": workspace_uri.rsplit("/", 1)[-1]}
        ]
    return params


def create_params(
    model: str,
    workspace_uri: str | None = None,
    title: str | None = None,
    context_window: int | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"model": model}
    for key, value in (
        ("workspaceUri", workspace_uri),
        ("title", title),
        ("contextWindow", context_window),
    ):
        if value is not None:
            params[key] = value
    return params


def append_params(
    session_id: str,
    role: str,
    parts: Sequence[Part],
    *,
    usage: Mapping[str, Any] | None = None,
    model: str | None = None,
    duration_ms: int | None = None,
    message_id: str | None = None,
) -> dict[str, Any]:
    """session/append's params; the message always carries an `id` (a new one unless given), so
    a retry after a lost reply stores it once."""
    message: dict[str, Any] = {
        "role": role,
        "parts": [dict(p) for p in parts],
        "id": message_id or uuid.uuid4().hex,
    }
    if usage is not None:
        message["usage"] = dict(usage)
    if model is not None:
        message["model"] = model
    if duration_ms is not None:
        message["durationMs"] = duration_ms
    return {"sessionId": session_id, "message": message}


def assemble_params(
    session_id: str,
    format: str = "openai",
    system: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session_id, "format": format, **extra}
    if system is not None:
        params["system"] = system
    if tools is not None:
        params["tools"] = [dict(t) for t in tools]
    return params
