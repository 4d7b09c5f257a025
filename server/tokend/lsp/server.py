"""create_server: a fresh pygls LanguageServer around the shared app (service/app.py).

One server per connection (the daemon) or per process (stdio); no module globals. Handlers
reach the app's parts through the server (`ls.app`, `ls.service`); registering them starts
nothing. Building a server subscribes it to what the app tells its connections (spend notices,
restores settled at start)."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

import tokend
from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import TokendError
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.host import ServerHost, StandaloneHost
from tokend.lsp.notices import hear_settled_restores, hear_spend_notices
from tokend.lsp.protocol import TokendProtocol, shared_converter
from tokend.lsp.wire import JsonText, to_wire
from tokend.lsp.wire.budget import BudgetDidChangeParams
from tokend.lsp.wire.repomap import RepoMapResult
from tokend.service.app import App
from tokend.service.workspace.closing import WorkspaceUser, serving
from tokend.service.workspace.documents import OpenDocuments

log = logging.getLogger(__name__)

BUDGET_DID_CHANGE = "budget/didChange"
F = TypeVar("F", bound=Callable[..., Any])


class TokendServer(LanguageServer):
    """One connection's server: knows the shared service and which sessions it watches.

    A server is built for every connection, on the event loop: its features are the same
    handlers each time, so what pygls inspects of them (their signature) is worked out once per
    handler (`feature`), not once per connection."""

    def __init__(self, app: App, host: ServerHost) -> None:
        super().__init__(
            "tokend",
            tokend.__version__,
            protocol_cls=TokendProtocol,
            converter_factory=shared_converter,  # one cattrs converter for every connection
        )
        self.app = app
        self.service = app.service
        self.host = host
        self.client_name: str | None = None
        self.initialization_options: dict[str, Any] = {}
        self.workspace_uri: str | None = None  # the first folder: its sessions, its settings
        self.workspace_folders: list[str] = []  # every folder the client named, in its order
        self.attached_session: str | None = None  # the session this connection follows
        self._watching: dict[str, Callable[[], None]] = {}
        self._used: set[str] = set()  # sessions this connection appended to, compacted, asked of
        self.ended = False  # after shutdown or the connection's close: nothing is watched again
        self.workspace_user = WorkspaceUser(f"{type(host).__name__} {id(self):x}")
        self.documents = OpenDocuments()  # this connection's open documents (lsp/documents.py)
        # repoMap/get's last map (compared with the next one) and the reply sent for it
        self.last_repo_map: tuple[object, JsonText | RepoMapResult] | None = None

    def serve_workspaces(self) -> None:
        """Call in the connection's own task: the workspaces its requests open count it as
        a user (released once their last user leaves: leave_workspaces)."""
        serving.set(self.workspace_user)

    def leave_workspaces(self, uri: str | None = None) -> None:
        """This connection no longer uses workspace `uri` (None: any; it is closing)."""
        self.app.workspaces.let_go(self.workspace_user, uri)

    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[F], F]:
        register = super().feature(feature_name, options)

        def decorator(handler: F) -> F:
            _known_signature(handler)
            return register(handler)

        return decorator

    def attach(self, session_id: str) -> BudgetSnapshot:
        """Follow `session_id`: its snapshot now, and budget/didChange after every change.

        A connection follows one session: the one it followed before is let go (no more
        budget/didChange for it) unless the connection used it itself (`watch`)."""
        snapshot = self.service.sessions.snapshot(session_id)  # raises SessionNotFound
        before = self.attached_session
        if before is not None and before != session_id and before not in self._used:
            self.unwatch(before)
        self.attached_session = session_id
        self.host.attached(session_id, self.client_name)
        self._subscribe(session_id)
        return snapshot

    def detach(self, session_id: str) -> None:
        self.unwatch(session_id)
        if self.attached_session == session_id:
            self.attached_session = None
            self.host.attached(None, self.client_name)

    def attach_initial_session(self) -> None:
        """initializationOptions.session: "active" (the workspace's newest session), an id, or
        nothing (the default: an agent follows the sessions it creates or attaches to, never
        another agent's that happens to be the workspace's newest)."""
        wanted = self.initialization_options.get("session")
        if not isinstance(wanted, str) or not wanted:
            return
        session_id = wanted
        if wanted == "active":
            newest = (
                self.service.sessions.active_session_id(self.workspace_uri)
                if self.workspace_uri
                else None
            )
            if newest is None:
                return
            session_id = newest
        try:
            snapshot = self.attach(session_id)
        except TokendError as exc:
            self.window_log_message(
                types.LogMessageParams(types.MessageType.Warning, f"tokend: {exc.message}")
            )
            return
        self._did_change(snapshot)

    def open_workspace(self) -> None:
        """Start indexing the client's workspace folders (in the background) as it connects,
        so file figures and the repo map are ready when first asked for."""
        for uri in self.workspace_folders:
            self.open_folder(uri)

    def open_folder(self, uri: str) -> None:
        """Start indexing one of the client's folders (a folder that is not one is logged)."""
        try:
            self.app.workspaces.open(uri, user=self.workspace_user)
        except TokendError as exc:
            log.info("workspace %s not indexed: %s", uri, exc.message)

    def watch(self, session_id: str) -> None:
        """Send budget/didChange for `session_id` to this connection after every change.

        Raises SessionNotFound for an unknown id (no listener is kept for it), RuntimeError once
        the connection has ended (a follower's late news must not subscribe a closed one)."""
        self._subscribe(session_id)
        self._used.add(session_id)

    def _subscribe(self, session_id: str) -> None:
        if self.ended:  # attach() too: nothing is watched again once the connection has ended
            raise RuntimeError("the connection has ended")
        if session_id not in self._watching:
            self.service.sessions.state(session_id)
            self._watching[session_id] = self.service.listeners.subscribe(
                session_id, lambda event: self._did_change(event.snapshot)
            )

    def watches(self, session_id: str) -> bool:
        """Whether this connection receives the session's budget/didChange."""
        return session_id in self._watching

    def unwatch(self, session_id: str) -> None:
        self._used.discard(session_id)
        unsubscribe = self._watching.pop(session_id, None)
        if unsubscribe:
            unsubscribe()

    def unwatch_all(self) -> None:
        """At shutdown or when the connection closes: no budget/didChange any more, ever."""
        self.ended = True
        for session_id in list(self._watching):
            self.unwatch(session_id)

    def release(self) -> None:
        """The connection is gone and its requests answered: let go of what ties this server in
        reference cycles (its protocol and feature table point back at it, and so do the
        callbacks it registered), so that it is freed at once, by reference
        counts, rather than at the collector's next full pass, which the daemon makes rare
        (daemon/process.py): closed connections' servers waited there, ~700 objects each."""
        self.unwatch_all()
        protocol = self.protocol
        fm = protocol.fm
        for table in (fm._builtin_features, fm._features, fm._feature_options, fm._commands):
            table.clear()
        protocol._request_futures.clear()
        protocol._result_types.clear()
        vars(protocol).pop("progress", None)  # Progress(protocol): a cycle of its own
        fm.server = None  # nothing is registered any more: nothing to pass the server to
        protocol._server = None  # type: ignore[assignment]  # (pygls: to run or report a handler)

    def _did_change(self, snapshot: BudgetSnapshot) -> None:
        change = BudgetDidChangeParams(snapshot.session_id, to_wire_snapshot(snapshot))
        self.protocol.notify(BUDGET_DID_CHANGE, to_wire(change))


_signatures: dict[tuple[CodeType, CodeType], inspect.Signature] = {}


def _known_signature(handler: Callable[..., Any]) -> None:
    """Give `handler` its signature, worked out once for all the closures of its code (and of
    the function it wraps): pygls reads it (inspect.signature, its first parameter) to decide
    whether to pass the server first, for every feature of every connection, and working it
    out afresh cost ~12 us a feature, half of building a server."""
    code = getattr(handler, "__code__", None)
    inner = getattr(inspect.unwrap(handler), "__code__", None)
    if code is None or inner is None or hasattr(handler, "__signature__"):
        return
    signature = _signatures.get((code, inner))
    if signature is None:
        signature = _signatures.setdefault((code, inner), inspect.signature(handler))
    handler.__signature__ = signature  # type: ignore[attr-defined]


@functools.cache
def _handler_modules() -> tuple[ModuleType, ...]:
    """The handler modules, found once per process (a directory listing each time otherwise)."""
    from tokend.lsp import handlers

    return tuple(handlers.modules())


def _workspace_folders(params: types.InitializeParams) -> list[str]:
    if params.workspace_folders:
        return list(dict.fromkeys(folder.uri for folder in params.workspace_folders))
    return [params.root_uri] if params.root_uri else []


def rpc(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Turn domain errors into JSON-RPC errors with their stable code (see protocol.md)."""

    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def async_wrapper(ls: TokendServer, params: Any) -> Any:
            try:
                return await handler(ls, params)
            except TokendError as exc:
                raise JsonRpcException(message=exc.message, code=exc.code, data=exc.data) from None

        return async_wrapper

    @functools.wraps(handler)
    def wrapper(ls: TokendServer, params: Any) -> Any:
        try:
            return handler(ls, params)
        except TokendError as exc:
            raise JsonRpcException(message=exc.message, code=exc.code, data=exc.data) from None

    return wrapper


def initialize(ls: TokendServer, params: types.InitializeParams) -> None:
    ls.client_name = params.client_info.name if params.client_info else None
    options = params.initialization_options
    ls.initialization_options = options if isinstance(options, dict) else {}
    ls.workspace_folders = _workspace_folders(params)
    ls.workspace_uri = ls.workspace_folders[0] if ls.workspace_folders else None


def initialized(ls: TokendServer, params: types.InitializedParams) -> None:
    ls.attach_initial_session()
    ls.open_workspace()


def shutdown(ls: TokendServer, params: None) -> None:
    ls.unwatch_all()


LIFECYCLE: dict[str, Callable[..., None]] = {
    types.INITIALIZE: initialize,
    types.INITIALIZED: initialized,
    types.SHUTDOWN: shutdown,
}


def create_server(app: App, host: ServerHost | None = None) -> TokendServer:
    """A server for one connection: the lifecycle handlers, then every feature module's tables
    (lsp/handlers/<feature>.py: FEATURES, NOTIFICATIONS) and what it hears of the connection
    (`connect`)."""
    server = TokendServer(app, host or StandaloneHost())
    logging.getLogger("pygls").setLevel(logging.WARNING)  # pygls logs every body at INFO
    for method, handler in LIFECYCLE.items():
        server.feature(method)(handler)
    for module in _handler_modules():
        for table in (getattr(module, "FEATURES", {}), getattr(module, "NOTIFICATIONS", {})):
            for method, feature in table.items():
                server.feature(method)(feature)
        if (connect := getattr(module, "connect", None)) is not None:
            connect(server)
    hear_spend_notices(server, app.usage)
    if app.optional_checkpoints is not None:
        hear_settled_restores(server, app.optional_checkpoints)
    return server
