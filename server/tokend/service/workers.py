"""The session core's worker threads: counting, loading and store writes run here, beside the
event loop, which serves other requests meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Workers:
    def __init__(self, threads: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tokend-work")

    async def run(self, work: Callable[[], T]) -> T:
        """Run `work` in a worker thread; the event loop serves others meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, work)

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """`work` queued for the worker threads (a store write: see service.session.turns)."""
        return self._pool.submit(work)

    def shutdown(self) -> None:
        """Finish the queued work and end the threads."""
        self._pool.shutdown(wait=True)
