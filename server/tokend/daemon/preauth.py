"""What unauthenticated connections may cost the daemon, all of them together.

Before authentication a frame may hold 256 KiB, and a body without the token is refused without
being parsed (dispatch.py); still, clients that connect, send such a frame and reconnect, over and
over, make the loop accept, read and answer for them. A PreAuthGate, one per daemon, bounds that:
the frames of unauthenticated connections, once read, are handled SLOTS at a time (the others
wait, which costs nothing), and a connection refused keeps its turn HOLD_SECONDS before it is
closed. So the daemon refuses at most SLOTS / HOLD_SECONDS frames a second (4), each costing the
loop about a millisecond (accept, read, answer, close), and a client that waits for the close to
try again gets one try a second. A client that connects and sends nothing
holds no turn. The wait counts against the connection's authentication deadline (5 s).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

SLOTS = 4
HOLD_SECONDS = 1.0


class PreAuthGate:
    def __init__(self, slots: int = SLOTS, hold_seconds: float = HOLD_SECONDS) -> None:
        self._slots = slots
        self._hold_seconds = hold_seconds
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold one of the slots (wait for one) while an unauthenticated frame is handled."""
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self._slots), loop
        async with self._semaphore:
            yield

    async def hold(self) -> None:
        """Keep the turn a moment after a refusal (call it inside `turn`)."""
        await asyncio.sleep(self._hold_seconds)
