"""`tokend serve`: the daemon around the shared app (service/app.py); `tokend status --daemon`
asks it from status_client.py."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tokend.adapters.heap import one_arena, release_freed_memory
from tokend.daemon.conn import Connection, Registry
from tokend.daemon.listener import run_daemon
from tokend.daemon.log_limit import BoundedValues
from tokend.daemon.paths import log_path
from tokend.daemon.process import configure_logging
from tokend.daemon.spawn import is_detached
from tokend.lsp.host import HostStatus

if TYPE_CHECKING:
    from tokend.service.app import App

log = logging.getLogger(__name__)


class DaemonHost:
    """ServerHost for one daemon connection: its slot in the registry, the daemon's status."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def status(self) -> HostStatus:
        return self._conn.daemon.status()

    def attached(self, session_id: str | None, client_name: str | None) -> None:
        self._conn.session_id = session_id
        if client_name and not self._conn.client_name:
            self._conn.client_name = client_name

    def busy(self) -> AbstractContextManager[None]:
        return self._conn.daemon.busy()

    def on_close(self, callback: Callable[[], None]) -> None:
        self._conn.add_close_callback(callback)

    def notify_others(self, method: str, params: Any, session_id: str) -> None:
        self._conn.registry.notify_all(method, params, session_id=session_id, exclude=self._conn)


WORKSPACE_EXTRA = "tokend_workspace"
"""Log with extra={WORKSPACE_EXTRA: uri} to tell only the clients of that workspace (None: the
clients that named no workspace)."""


class ClientLogHandler(logging.Handler):
    """Sends the daemon's warnings and errors, as window/logMessage, to the clients they concern.

    - A record logged while a connection is being served (its malformed frames, its failed
      requests, whatever its handlers log) goes to that connection only.
    - A record logged with extra={WORKSPACE_EXTRA: uri} (say, that workspace's .tokend.toml is
      invalid) goes to the connections whose workspace is `uri`; `workspace_warnings` does this
      for the settings' warnings, and pops up one window/showMessage for them.
    - Anything else is the daemon's own problem and goes to every client.

    pygls's records are never sent (they may hold message bodies); nor is anything logged off
    the event loop's thread, where the registry may not be touched.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.addFilter(BoundedValues())  # a client's logMessage is bounded like the log file
        self.registry: Registry | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._serving: ContextVar[Connection | None] = ContextVar("tokend_serving", default=None)
        self._sending = False

    def serving(self, conn: Connection) -> None:
        """Called in the connection's own task (the connection factory): from now on, what
        that task logs concerns `conn`."""
        self.registry = conn.registry
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.current_thread()
        self._serving.set(conn)

    def workspace_warnings(self, workspace_uri: str | None, warnings: tuple[str, ...]) -> None:
        """WorkspaceSettings' on_warnings hook; any thread. Each warning goes to the log and, as
        window/logMessage, to the workspace's clients, which also get one window/showMessage:
        their settings need fixing."""
        if self._loop is not None and threading.current_thread() is not self._loop_thread:
            self._loop.call_soon_threadsafe(self.workspace_warnings, workspace_uri, warnings)
            return
        for warning in warnings:
            log.warning("config: %s", warning, extra={WORKSPACE_EXTRA: workspace_uri})
        if self.registry is None or not warnings:
            return
        more = f" (and {len(warnings) - 1} more: see `tokend config`)" if len(warnings) > 1 else ""
        params = types.ShowMessageParams(
            type=types.MessageType.Warning, message=f"tokend: {warnings[0]}{more}"
        )
        for conn in clients_of_workspace(self.registry, workspace_uri):
            conn.server.protocol.notify(types.WINDOW_SHOW_MESSAGE, params)

    def emit(self, record: logging.LogRecord) -> None:
        if self.registry is None or self._sending or record.name.startswith("pygls"):
            return
        if threading.current_thread() is not self._loop_thread:
            return
        kind = (
            types.MessageType.Error
            if record.levelno >= logging.ERROR
            else types.MessageType.Warning
        )
        self._sending = True
        try:
            params = types.LogMessageParams(type=kind, message=f"tokend: {record.getMessage()}")
            for conn in self._recipients(record):
                conn.server.protocol.notify(types.WINDOW_LOG_MESSAGE, params)
        except Exception:  # a log line must never break the daemon
            pass
        finally:
            self._sending = False

    def _recipients(self, record: logging.LogRecord) -> list[Connection]:
        assert self.registry is not None
        if hasattr(record, WORKSPACE_EXTRA):
            return clients_of_workspace(self.registry, getattr(record, WORKSPACE_EXTRA))
        conn = self._serving.get()
        if conn is not None:
            return [conn] if _reachable(conn) else []
        return [c for c in self.registry if _reachable(c)]


def clients_of_workspace(registry: Registry, workspace_uri: str | None) -> list[Connection]:
    """The open connections whose client named `workspace_uri` as one of its workspace folders
    (in initialize, or added since)."""
    return [conn for conn in registry if _reachable(conn) and _names(conn.server, workspace_uri)]


def _names(server: object, workspace_uri: str | None) -> bool:
    folders = getattr(server, "workspace_folders", None) or ()
    return getattr(server, "workspace_uri", None) == workspace_uri or workspace_uri in folders


def _reachable(conn: Connection) -> bool:
    return conn.server is not None and not conn.closing and conn.authenticated


def serve_forever(args: argparse.Namespace) -> int:
    from tokend.lsp import handlers
    from tokend.lsp.handler_table import prepare_hooks
    from tokend.service.app import open_app

    one_arena()  # before any thread of the daemon's allocates (adapters.heap)
    # Before the app: what building it logs (say, an invalid config) belongs in the log file,
    # not on a detached daemon's stderr, which is kept for crashes.
    configure_logging(args.log_level, log_path(args.name))
    to_clients = ClientLogHandler()
    app = open_app(None, args.database_url, on_warnings=to_clients.workspace_warnings, serving=True)
    service = app.service
    # SQLite's own check, bounded in time; damage is logged (stderr too when in a terminal).
    damage = app.check_store()
    prepare_hooks(handlers.modules())  # an agent's first requests' wire classes, not in them
    logging.getLogger("tokend").addHandler(to_clients)
    app.workspaces.released_hooks.append(lambda key: release_freed_memory())
    connection_factory = _connection_factory(app, to_clients, damage)
    stop_feed: list[Callable[[], None]] = []

    def ready(addresses: list[str]) -> None:
        # Called on the running loop: from now on, other daemons' changes reach our editors.
        stop = service.remote.listen(asyncio.get_running_loop())
        if stop is not None:
            stop_feed.append(stop)
        if is_detached():  # stderr is the crash file: it stays empty unless the daemon dies
            log.info("tokend %s: listening on %s", _version(), ", ".join(addresses))
            return
        sys.stderr.write(f"tokend {_version()}: listening on {', '.join(addresses)}\n")
        sys.stderr.write("tokend: ready\n")
        sys.stderr.flush()

    idle = args.idle_timeout if args.idle_timeout is not None else service.config.idle_timeout_s
    closed: list[bool] = []

    def closing() -> None:
        """After the requests in flight: the background work ends (bounded), then the service
        closes; what is logged after this is the listener's "daemon stopped"."""
        if closed:
            return
        closed.append(True)
        for stop in stop_feed:
            stop()
        logging.getLogger("tokend").removeHandler(to_clients)
        app.close()

    try:
        return run_daemon(
            args.listen,
            connection_factory=connection_factory,
            ready=ready,
            idle_timeout=idle if idle > 0 else None,
            log_level=args.log_level,
            name=args.name,
            stopping=app.begin_stop,
            closing=closing,
            keep_alive=app.following_keeps_alive,
        )
    finally:
        closing()  # when the daemon could not start


def _connection_factory(
    app: App, to_clients: ClientLogHandler, damage: str | None
) -> Callable[[Connection], Any]:
    """Builds each connection's server; the first one starts the app's background work."""
    from tokend.lsp.server import create_server

    started: list[bool] = []

    def connection_factory(conn: Connection) -> Any:
        to_clients.serving(conn)
        server = create_server(app, DaemonHost(conn))
        if not started:  # with its first client listening: it hears of the restores settled
            started.append(True)
            app.start()
        server.serve_workspaces()  # what this connection's requests open, it uses
        conn.add_close_callback(server.unwatch_all)  # an editor may vanish without shutdown
        if damage is not None:  # once wired to the connection, after this first message
            asyncio.get_running_loop().call_soon(_tell_damage, conn, damage)
        conn.add_close_callback(server.leave_workspaces)  # released when nobody else uses them
        return server

    return connection_factory


def _tell_damage(conn: Connection, report: str) -> None:
    """The store check's report to a client, as window/logMessage (Error)."""
    if conn.server is None or conn.closing:
        return
    params = types.LogMessageParams(type=types.MessageType.Error, message=f"tokend: {report}")
    conn.server.protocol.notify(types.WINDOW_LOG_MESSAGE, params)


def _version() -> str:
    import tokend

    return tokend.__version__
