"""The JSON-RPC 2.0 envelope of one message, checked for any protocol (dispatch.py answers
what is wrong): what is wrong with an envelope, and with a body that is not JSON, in words that
quote none of the body's bytes (a secret may be inside)."""

from __future__ import annotations

import json
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def envelope_problem(data: Any) -> tuple[str | None, int | str | None]:
    """(what is wrong with the JSON-RPC envelope or None, the id to answer)."""
    if not isinstance(data, dict):
        return "the message is not a JSON-RPC 2.0 object", None
    raw_id = data.get("id")
    msg_id = raw_id if isinstance(raw_id, int | str) and not isinstance(raw_id, bool) else None
    if raw_id is not None and msg_id is None:
        return "id must be an integer or a string", None
    if data.get("jsonrpc") != "2.0":
        version = str(data.get("jsonrpc"))[:16]
        return f'jsonrpc must be "2.0", not {version!r}', msg_id
    method = data.get("method")
    if method is None and "result" not in data and "error" not in data:
        return "neither a request, a notification nor a response", msg_id
    if method is not None and (not isinstance(method, str) or not method):
        return "method must be a non-empty string", msg_id
    return None, msg_id


def body_problem(error: BaseException) -> str:
    """What is wrong with a body, without any of its bytes."""
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 (byte {error.start}: {error.reason})"
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg}, char {error.pos})"
    return f"not JSON ({type(error).__name__})"
