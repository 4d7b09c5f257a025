"""The session core's calls on this tree or on a baseline tree from before TokendService was
split into parts (issue 18), for the benches that run both trees' code with one script."""

from __future__ import annotations

import asyncio
from typing import Any

# A script that writes argv[2] sessions of 4 messages (one provider call) into the store at
# argv[1], with the code of the tree on PYTHONPATH (which also holds this checkout's root, for
# this module): the store a listing bench then lists. Trees before the composition root have
# no open_service; their factory's build_service takes the same arguments.
WRITE_SESSIONS = r"""
import sys
try:
    from tokend.service.app import open_service as opener
except ImportError:  # main before the composition root
    from tokend.service.factory import build_service as opener
from bench.service_shape import append, sessions
from tokend.core.types import TextPart, Usage
s = opener(None, sys.argv[1])
for i in range(int(sys.argv[2])):
    sid = sessions(s).create_session("gpt-4o", workspace_uri="file:///ws").id
    append(s, sid, "user", [TextPart(f"task {i}: make the build pass " * 20)])
    append(s, sid, "assistant", [TextPart("done " * 50)], usage=Usage(1000 + i, 60))
    append(s, sid, "user", [TextPart("thanks, next")])
    append(s, sid, "assistant", [TextPart("ok")])
s.close()
"""


def sessions(service: Any) -> Any:
    """What holds create_session / state / snapshot / reload (the service itself before)."""
    return getattr(service, "sessions", service)


def models(service: Any) -> Any:
    """What holds counter / config_for (the service itself before)."""
    return getattr(service, "models", service)


def append(service: Any, session_id: str, role: str, parts: list[Any], **options: Any) -> Any:
    """One message appended as each tree's production appends it."""
    appends = getattr(service, "appends", None)
    if appends is None:
        return service.append(session_id, role, parts, **options)
    return asyncio.run(appends.append(session_id, role, parts, **options))


async def append_on_loop(
    service: Any, session_id: str, role: str, parts: list[Any], **options: Any
) -> Any:
    """As `append`, from a coroutine already on the event loop: the path session/append takes
    on either tree (a tree without the async path: its sync append)."""
    appends = getattr(service, "appends", None)
    if appends is not None:
        return await appends.append(session_id, role, parts, **options)
    if hasattr(service, "append_async"):
        return await service.append_async(session_id, role, parts, **options)
    return service.append(session_id, role, parts, **options)
