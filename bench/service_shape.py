"""The session core's calls on this tree or on a baseline tree from before TokendService was
split into parts (issue 18), for the benches that run both trees' code with one script."""

from __future__ import annotations

import asyncio
from typing import Any


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
