"""Order and cancellation of a session's writes on the daemon's event loop.

- `Turns`: a session's queue of appends. A turn is taken synchronously when the request is
  dispatched (before its first await), so the requests one connection pipelines hold turns in
  the order the daemon read them; the slow part (counting) runs in parallel, and each append is
  applied once every earlier turn is over: applied, refused, failed or cancelled.
- `run_to_end`: the commit point. Once a change is handed to the store, a cancel of the task
  awaiting it no longer stops it: the write and its publication finish, and the result is
  returned (LSP lets a server answer a cancelled request with its result).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Turn:
    """One place in a session's queue of appends."""

    def __init__(self, before: asyncio.Future[None] | None, mine: asyncio.Future[None]) -> None:
        self._before = before
        self._mine = mine

    async def wait(self) -> None:
        """Until every earlier turn is over. Cancelling the waiting task raises CancelledError
        here and leaves the earlier turns alone."""
        if self._before is not None and not self._before.done():
            await asyncio.wait([self._before])

    def release(self) -> None:
        """This turn is over (whatever its outcome): the next one goes once every earlier one
        is over too, so a turn that ends early (cancelled while waiting) never lets a later
        append overtake an earlier one still being applied."""
        if self._mine.done():
            return
        if self._before is None or self._before.done():
            self._mine.set_result(None)
        else:
            self._before.add_done_callback(self._follow)

    def _follow(self, _: asyncio.Future[None]) -> None:
        if not self._mine.done():
            self._mine.set_result(None)


class Turns:
    """The queue itself: the last turn handed out (earlier ones are chained behind it)."""

    def __init__(self) -> None:
        self._last: asyncio.Future[None] | None = None

    def take(self) -> Turn:
        """The next turn; call on the event loop, before the request's first await."""
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        before, self._last = self._last, mine
        return Turn(before, mine)


async def run_to_end(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` to its end even when the task awaiting it is cancelled meanwhile, and return
    its result; the cancel is then dropped. Call it at the commit point: a cancel that arrives
    before it raises there and nothing is written."""
    task = asyncio.ensure_future(work)
    cancelled = 0
    try:
        while True:
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.cancelled():
                    raise
                cancelled += 1
    finally:
        current = asyncio.current_task()
        for _ in range(cancelled if current is not None else 0):
            assert current is not None
            current.uncancel()
