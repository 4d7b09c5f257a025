"""Order and cancellation of a session's writes on the daemon's event loop.

- `Turns`: a session's queue of appends. A turn is taken synchronously when the request is
  dispatched (before its first await), so the requests one connection pipelines hold turns in
  the order the daemon read them; the slow part (counting) runs in parallel, and each append is
  applied once every earlier turn is over: applied, refused, failed or cancelled.
- `committed`: the commit point of a store write run in a worker thread. A cancel that arrives
  while the write is still queued takes it off the queue (nothing written, CancelledError); once
  the thread has started it, the cancel is dropped, the write finishes and its result is
  returned (LSP lets a server answer a cancelled request with its result).
- `run_to_end`: the same for a whole coroutine (a compaction's writes, a rewind's files).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
Submit = Callable[[Callable[[], T]], concurrent.futures.Future[T]]


class Turns:
    """Tickets in the order taken; the one being served, and the ones over before their turn."""

    def __init__(self) -> None:
        self._taken = 0
        self._serving = 0
        self._over_early: set[int] = set()
        self._waiting: dict[int, asyncio.Future[None]] = {}

    def take(self) -> Turn:
        """The next turn; call on the event loop, before the request's first await."""
        self._taken += 1
        return Turn(self, self._taken - 1)

    async def _wait(self, ticket: int) -> None:
        if ticket == self._serving:
            return
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = woken
        try:
            await woken  # a cancel cancels only this future: nobody else waits on it
        finally:
            self._waiting.pop(ticket, None)

    def _release(self, ticket: int) -> None:
        if ticket != self._serving:  # over before its turn came (refused, cancelled)
            self._over_early.add(ticket)
            return
        self._serving += 1
        while self._serving in self._over_early:
            self._over_early.discard(self._serving)
            self._serving += 1
        woken = self._waiting.get(self._serving)
        if woken is not None and not woken.done():
            woken.set_result(None)


class Turn:
    """One place in a session's queue of appends."""

    def __init__(self, turns: Turns, ticket: int) -> None:
        self._turns = turns
        self._ticket = ticket
        self._released = False

    async def wait(self) -> None:
        """Until every earlier turn is over. Cancelling the waiting task raises CancelledError
        here and leaves the other turns alone."""
        await self._turns._wait(self._ticket)

    def release(self) -> None:
        """This turn is over, whatever its outcome. A turn released before its own came (it
        was refused or cancelled early) is skipped when reached: a later append never
        overtakes an earlier one that is still being applied."""
        if not self._released:
            self._released = True
            self._turns._release(self._ticket)


async def committed(submit: Submit[T], write: Callable[[], T]) -> T:
    """`write` run by `submit` (a worker thread), its result returned. Cancelled before the
    thread starts it: taken off the queue, CancelledError, nothing written. Cancelled later:
    the write is finished, the cancel dropped, the result returned (see the module docstring)."""
    future = submit(write)
    cancelled = 0
    try:
        while True:
            try:
                return await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                if future.cancelled():  # the cancel reached it while it was queued
                    raise
                cancelled += 1  # running or done: wait for it (again)
    finally:
        uncancel(cancelled)


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
        uncancel(cancelled)


def uncancel(times: int) -> None:
    current = asyncio.current_task()
    for _ in range(times if current is not None else 0):
        assert current is not None
        current.uncancel()
