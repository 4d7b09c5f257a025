"""session/append as production runs it (service.session.appends.append: counted in a worker thread,
applied by the session's owner in its turn), for a synchronous test or script."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.types import Message, Part, Role
from tokend.service.service import TokendService

T = TypeVar("T")


def append(
    service: TokendService, session_id: str, role: Role, parts: Sequence[Part], **options: Any
) -> tuple[Message, BudgetSnapshot]:
    """Append one message on an event loop of its own, once the exact counts it left under way
    are stored (a big text of a slow tokenizer); the message and the snapshot it produced.
    Called from a coroutine (a test holding its loop, as the sync twin did), the append runs
    on a loop in another thread while this one waits."""

    async def appended() -> tuple[Message, BudgetSnapshot]:
        result = await service.appends.append(session_id, role, parts, **options)
        await service.upgrades.drain()
        assert result.message is not None  # a new message, in the live context
        return result.message, service.sessions.snapshot(session_id)

    return run_on_own_loop(appended())


def run_on_own_loop(work: Coroutine[Any, Any, T]) -> T:
    """`work` run on an event loop of its own; from a coroutine (a test holding its loop), on
    a loop in another thread while this one waits."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, work).result()
