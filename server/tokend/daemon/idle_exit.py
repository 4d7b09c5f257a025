"""The daemon's idle exit, after `timeout` seconds with no connection and nothing busy.

A connection whose client left counts until its requests in flight are answered. At the
deadline the socket files are first moved aside (lifetime.py), so new clients start a new
daemon instead of reaching this one; connections already in the listen backlog are accepted;
if any came in, the sockets are put back and the daemon stays. Otherwise it stops. While
`keep_alive()` is True (work that outlives connections, such as following a transcript) the
exit waits, asked again every timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tokend.daemon.listen_sockets import ListenSockets

log = logging.getLogger(__name__)

SETTLE_SECONDS = 0.02  # at the idle deadline, for clients already connecting to be accepted


class IdleExit:
    """Arms a timer whenever the daemon becomes idle; stops it once it stayed idle."""

    def __init__(
        self,
        timeout: float | None,
        sockets: ListenSockets,
        is_idle: Callable[[], bool],
        stop: Callable[[], None],
        keep_alive: Callable[[], bool],
    ) -> None:
        """`timeout` is in seconds; None or <= 0 means never exit for idleness."""
        self.timeout = timeout if timeout and timeout > 0 else None
        self._keep_alive = keep_alive
        self.loop: asyncio.AbstractEventLoop | None = None  # set once the daemon started
        self._sockets = sockets
        self._is_idle = is_idle
        self._stop = stop
        self._handle: asyncio.TimerHandle | None = None
        self._check: asyncio.Task[None] | None = None

    def arm(self) -> None:
        """(Re)start the countdown if the daemon is idle now; cancel it otherwise."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self.timeout is None or self.loop is None or not self._is_idle():
            return
        self._handle = self.loop.call_later(self.timeout, self._expired)

    def _expired(self) -> None:
        self._handle = None
        if self._is_idle() and self._keep_alive():
            log.debug("no connection, but work in the background: serving on")
            self.arm()
            return
        if self._is_idle() and self._check is None and self.loop is not None:
            self._check = self.loop.create_task(self._exit_if_still_idle())

    async def _exit_if_still_idle(self) -> None:
        """Move the socket aside, accept whoever was already connecting, then exit only if
        nobody did; otherwise put the socket back and serve on."""
        hidden = self._sockets.hide()
        try:
            await asyncio.sleep(SETTLE_SECONDS)  # a connect() that found the path completes
            while self._sockets.backlog_pending():
                await asyncio.sleep(SETTLE_SECONDS)
            await asyncio.sleep(0)  # connections accepted just now register themselves
            if self._is_idle() and not self._sockets.backlog_pending():
                log.info("no connection for %.1f s; shutting down", self.timeout)
                for moved in hidden:
                    moved.remove()
                self._sockets.release()  # at once: nothing may connect in between
                self._stop()
                return
            log.info("a client connected at the idle deadline; serving on")
            for moved in hidden:
                moved.restore()
        finally:
            self._check = None
        self.arm()
