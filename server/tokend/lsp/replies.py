"""What a reply's error may say: bounded, with no traceback, and a params problem named by field.

`safe_error` is applied to every error a connection's protocol sends (protocol.py's
`_send_response`): its message is cut to MESSAGE_CHARS, its data's strings too, and pygls's
`data.traceback` (which InternalError carries by default) is dropped. `internal_error` is what a
bug answers instead: the method and the exception's type, and where the traceback went.
`params_problem` turns a cattrs failure into "invalid params: <field> <what is wrong>; …".
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import cattrs
from pygls.exceptions import JsonRpcInternalError

from tokend.core.excerpt import MESSAGE_CHARS, bounded
from tokend.lsp.strict import format_error, join_problems
from tokend.lsp.wire import camel


def internal_error(method: str, error: BaseException | None = None) -> Any:
    """InternalError for a bug met while serving `method`: what and where, no traceback."""
    kind = f" ({type(error).__name__})" if error is not None else ""
    return JsonRpcInternalError(
        f"tokend failed while serving {bounded(method, 200)}{kind}: a bug, not your request's "
        "fault; daemon.log in tokend's state directory has the details"
    ).to_response_error()


def safe_error(error: Any) -> Any:
    """A reply's error as sent: its message bounded, its data's strings too, and never a
    traceback in its data."""
    message, data = getattr(error, "message", None), getattr(error, "data", None)
    if isinstance(data, dict) and "traceback" in data:
        data = {k: v for k, v in data.items() if k != "traceback"} or None
    if isinstance(data, dict | list):
        data = _bounded_strings(data)
    if isinstance(message, str) and len(message) > MESSAGE_CHARS:
        message = bounded(message)
    if message is error.message and data is error.data:
        return error
    return attrs.evolve(error, message=message, data=data)


def _bounded_strings(value: Any) -> Any:
    """`value` with each string over MESSAGE_CHARS cut (a new value if any was)."""
    if isinstance(value, str):
        return bounded(value) if len(value) > MESSAGE_CHARS else value
    if isinstance(value, dict):
        items = {k: _bounded_strings(v) for k, v in value.items()}
        return value if all(items[k] is value[k] for k in value) else items
    if isinstance(value, list):
        listed = [_bounded_strings(v) for v in value]
        return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
    return value


def params_problem(exc: Exception) -> str:
    """What does not fit, by field path in the wire's camelCase; never a value."""
    if isinstance(exc, cattrs.ClassValidationError):
        found = cattrs.transform_error(exc, path="message", format_exception=format_error)
        return "invalid params: " + join_problems([_camel_path(m) for m in found])
    return f"invalid params ({type(exc).__name__})"


def _camel_path(message: str) -> str:
    text, at, path = message.rpartition(" @ ")
    if not at:
        return message
    return f"{text} @ " + re.sub(r"(?<=\.)[a-z_]+", lambda m: camel(m.group(0)), path)
