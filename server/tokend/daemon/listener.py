"""Daemon: the per-user accept loop (a unix socket, optionally loopback TCP with a token).

Each accepted connection gets its own pygls server from `connection_factory(conn)` (see
serve_conn.run_connection). It never steals a live daemon's socket: it holds an flock on
`<socket>.lock` for its whole life, and a socket file nobody answers on is replaced
(listen_sockets.py). What `--listen` accepts and which peers are let in is in endpoints.py.

Stopping never drops work:
- Idle exit (idle_exit.py), after `idle_timeout` seconds with no connection (a connection whose
  client left counts until its requests in flight are answered) and nothing busy: the socket
  file is first moved aside (lifetime.py), so new clients start a new daemon instead of
  reaching this one; connections already in the listen backlog are accepted; if any came in,
  the socket is put back and the daemon stays. Otherwise it exits, removing its socket.
- SIGTERM / stop(): the socket is removed and listeners closed at once; `stopping` tells the
  background work to stop (requests waiting for it are answered with an error); every
  connection stops reading, its requests in flight are answered and flushed (up to
  STOP_GRACE_SECONDS); `closing` ends the background work (bounded); "daemon stopped" is the
  log's last line, and only then is the lock on the socket path released: a new daemon never
  runs beside this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tokend.daemon.conn import Connection, PeerKind, Registry
from tokend.daemon.endpoints import ListenAddress, check_peer, parse_listen
from tokend.daemon.idle_exit import IdleExit
from tokend.daemon.listen_sockets import ListenSockets
from tokend.daemon.outbox import Outbox
from tokend.daemon.paths import (
    DaemonAlreadyRunning,
    UnsafePathError,
    load_or_create_token,
    log_path,
    socket_path,
)
from tokend.daemon.process import (
    SWITCH_INTERVAL_S,
    configure_logging,
    return_big_blocks_to_the_system,
    tune_the_collector,
)
from tokend.daemon.serve_conn import Limits, run_connection
from tokend.lsp.host import HostStatus

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0  # after SIGTERM, for requests in flight to be answered

ConnectionFactory = Callable[[Connection], Any]


class Daemon:
    """Accepts connections on its listeners and serves each with its own server."""

    def __init__(
        self,
        connection_factory: ConnectionFactory,
        listen: Sequence[ListenAddress],
        *,
        idle_timeout: float | None = 60.0,
        token: str | None = None,
        limits: Limits | None = None,
        outbox_options: dict[str, Any] | None = None,
    ) -> None:
        """`idle_timeout` is in seconds; None or <= 0 means never exit for idleness."""
        self.registry = Registry()
        self._factory = connection_factory
        self._listen = list(listen)
        self._token = token
        self._limits = limits or Limits()
        self._outbox_options = outbox_options or {}
        self._sockets = ListenSockets()
        self.on_stopping: Callable[[], None] | None = None  # on the loop, as the stop begins
        # Work that outlives connections (following a transcript): True postpones the idle exit.
        self.keep_alive: Callable[[], bool] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy_count = 0
        self._busy_lock = threading.Lock()
        self._idle_exit = IdleExit(
            idle_timeout,
            self._sockets,
            is_idle=self._idle,
            stop=self.stop,
            keep_alive=lambda: self.keep_alive is not None and self.keep_alive(),
        )
        self._started_at = time.monotonic()
        self._stopping: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> list[str]:
        """Bind every listener; returns their addresses (TCP with the real port)."""
        self._loop = self._idle_exit.loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._token is None and any(a.kind == "tcp" for a in self._listen):
            self._token = load_or_create_token()
        addresses: list[str] = []
        try:
            for address in self._listen:
                addresses.append(await self._sockets.bind(address, self._client_handler))
        except BaseException:
            self._sockets.release()
            self.release_locks()
            raise
        self._idle_exit.arm()
        return addresses

    async def run(self) -> None:
        """Serve until stop() or the idle timeout; then take no new client, answer what is in
        flight (up to STOP_GRACE_SECONDS), remove the socket and return."""
        assert self._stopping is not None, "call start() first"
        await self._stopping.wait()
        self._sockets.release()
        if self.on_stopping is not None:
            try:
                self.on_stopping()
            except Exception:
                log.exception("telling the background work to stop failed")
        for conn in self.registry:
            conn.stop_reading()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=STOP_GRACE_SECONDS)
        for conn in self.registry:
            log.warning("connection %s: %d requests unanswered at exit", conn.id, conn.in_flight)
            conn.outbox.abort()

    def stop(self) -> None:
        if self._stopping is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Hold the daemon alive (no idle exit) while a write or compaction is in flight."""
        with self._busy_lock:
            self._busy_count += 1
        self._call_in_loop(self._idle_exit.arm)
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy_count -= 1
            self._call_in_loop(self._idle_exit.arm)

    def status(self) -> HostStatus:
        """The daemon's part of daemon/status (its pid, uptime, busy count and connections)."""
        uptime = round(time.monotonic() - self._started_at, 3)
        return HostStatus(os.getpid(), uptime, self.registry.describe(), busy=self._busy_count)

    # -- listeners -------------------------------------------------------------------------

    def release_locks(self) -> None:
        """Let a new daemon bind the socket paths: called once this one has stopped."""
        self._sockets.release_locks()

    def _client_handler(self, peer: PeerKind) -> Callable[..., Any]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            self._idle_exit.arm()
            try:
                await self._serve_client(reader, writer, peer)
            finally:
                self._tasks.discard(task)
                self._idle_exit.arm()

        return handle

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: PeerKind
    ) -> None:
        peer_pid = check_peer(writer, peer)
        if peer_pid is False or (self._stopping is not None and self._stopping.is_set()):
            writer.transport.abort()
            return
        conn_id = self.registry.new_id()
        outbox = Outbox(writer, name=conn_id, **self._outbox_options)
        token = self._token if peer == "tcp" else None
        conn = Connection(
            conn_id,
            peer,
            outbox,
            self,
            self.registry,
            expected_token=token,
            peer_pid=peer_pid or None,
        )
        self.registry.add(conn)
        log.info("connection %s opened (%s, pid %s)", conn_id, peer, peer_pid or "?")
        try:
            await run_connection(conn, reader, self._factory, self._limits)
        finally:
            self.registry.remove(conn)
            log.info("connection %s closed (%d left)", conn_id, len(self.registry))

    # -- idle shutdown (idle_exit.py) --------------------------------------------------------

    def _idle(self) -> bool:
        """No connection (not even one being accepted or finishing its work), nothing busy."""
        return not self._tasks and not self._busy_count

    def _call_in_loop(self, callback: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            callback()
        else:
            loop.call_soon_threadsafe(callback)


async def serve(
    listen: list[str],
    idle_timeout: float | None,
    connection_factory: ConnectionFactory,
    ready: Callable[[list[str]], None],
    stopping: Callable[[], None] | None = None,
    closing: Callable[[], None] | None = None,
    keep_alive: Callable[[], bool] | None = None,
) -> None:
    """Run the daemon until idle or SIGTERM/SIGINT; calls ready(addresses) once listening,
    `stopping()` as the stop begins (on the loop: no waiting), `closing()` once the requests
    in flight are answered (it may wait, bounded), then logs "daemon stopped". While
    `keep_alive()` is True the idle exit waits (asked again every idle timeout).

    `listen` holds `unix:PATH` / `tcp:127.0.0.1:PORT` specs; empty means the default socket.
    Prints nothing. Raises DaemonAlreadyRunning, UnsafePathError or ValueError (bad spec).
    """
    addresses = [parse_listen(spec) for spec in listen] or [ListenAddress("unix", socket_path())]
    daemon = Daemon(connection_factory, addresses, idle_timeout=idle_timeout)
    tune_the_collector()
    bound = await daemon.start()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, daemon.stop)
    daemon.on_stopping = stopping
    daemon.keep_alive = keep_alive
    try:
        ready(bound)
        await daemon.run()
        if closing is not None:
            closing()
        log.info("daemon stopped")
    finally:
        daemon.release_locks()


def run_daemon(
    listen: list[str],
    *,
    connection_factory: ConnectionFactory,
    ready: Callable[[list[str]], None],
    idle_timeout: float | None = 60.0,
    log_level: str = "info",
    name: str | None = None,
    stopping: Callable[[], None] | None = None,
    closing: Callable[[], None] | None = None,
    keep_alive: Callable[[], bool] | None = None,
) -> int:
    """`tokend serve`: log to the state dir and stderr, serve until idle; 1 if it cannot start."""
    configure_logging(log_level, log_path(name))
    return_big_blocks_to_the_system()
    # Worker threads count and write while the loop answers: hand the interpreter over every
    # 0.5 ms (default 5 ms), so a reply never waits long behind another connection's work.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    listen = listen or [f"unix:{socket_path(name)}"]
    try:
        asyncio.run(
            serve(listen, idle_timeout, connection_factory, ready, stopping, closing, keep_alive)
        )
    except (DaemonAlreadyRunning, UnsafePathError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    return 0
