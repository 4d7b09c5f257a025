"""workspace/fileTokens, and workspace/didChangeFileTokens to the connections that asked."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from tokend.lsp import wire
from tokend.service.workspace.figures import FileFigure
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.registry import Progress, Workspaces

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer

log = logging.getLogger(__name__)

DID_CHANGE_FILE_TOKENS = "workspace/didChangeFileTokens"
DEFAULT_COUNT_MODEL = "gpt-4o"  # o200k_base: exact counts when no session names a model
_tokens = itertools.count(1)


@attrs.frozen
class FileTokensParams:
    workspace_uri: str
    paths: list[str] | None = None
    exact: bool = False
    session_id: str | None = None


def to_wire_figure(figure: FileFigure) -> dict[str, Any]:
    """One file's figure: `bytes` on disk (or of the unsaved text), `tokens` of its text."""
    out: dict[str, Any] = {
        "path": figure.path,
        "bytes": figure.size_bytes,
        "tokens": figure.tokens,
        "basis": figure.basis,
        "dirty": figure.dirty,
    }
    if figure.reason:
        out["reason"] = figure.reason
    return out


def _estimates(index: WorkspaceIndex, rels: list[str] | None) -> wire.JsonText:
    """The estimated figures of `rels` (every file when None) as a JSON array (a thread's work:
    100,000 of them take a second)."""
    return wire.json_array(map(to_wire_figure, index.each_figure(rels, None, None)))


def follow(ls: TokendServer, workspaces: Workspaces, uri: str) -> None:
    """Send this connection workspace/didChangeFileTokens for the workspace from now on."""
    key = workspaces.key(uri)
    followed: set[str] = ls.__dict__.setdefault("_tokend_workspaces", set())
    if key in followed:
        return
    followed.add(key)
    subscribed: list[Callable[[], None]] = []  # emptied once unsubscribed: no cycle is left

    def stop() -> None:
        while subscribed:
            subscribed.pop()()

    def send(workspace_uri: str, figures: list[FileFigure]) -> None:
        files = [to_wire_figure(f) for f in figures]
        try:
            if ls.protocol.writer is None:  # the connection is gone
                raise ConnectionError
            ls.protocol.notify(
                DID_CHANGE_FILE_TOKENS, {"workspaceUri": workspace_uri, "files": files}
            )
        except (ConnectionError, OSError):
            stop()

    def notice(message: str) -> None:
        ls.window_log_message(
            types.LogMessageParams(types.MessageType.Warning, f"tokend: {message}")
        )

    subscribed.append(workspaces.subscribe(uri, send, notice))
    ls.host.on_close(stop)  # else the workspace's listeners keep the closed connection's server


class _IndexProgress:
    """An index build's $/progress on one token, created only when a build begins: `begin` is
    sent once the client answered window/workDoneProgress/create, reports and the end after
    it; if the client refused the token (an error answer), nothing is sent on it."""

    def __init__(self, ls: TokendServer) -> None:
        self._ls = ls
        self._token: str | None = None
        self._pending: list[tuple[str, str]] | None = []  # None once created (or refused)
        self._refused = False

    def tell(self, kind: str, message: str) -> None:
        """One step of the build (on the event loop)."""
        if self._refused:
            return
        if self._pending is not None:
            self._pending.append((kind, message))
            if self._token is None:
                self._create()
            return
        self._send(kind, message)

    def _create(self) -> None:
        self._token = token = f"tokend-index-{next(_tokens)}"
        params = types.WorkDoneProgressCreateParams(token=token)
        answer = self._ls.protocol.send_request(types.WINDOW_WORK_DONE_PROGRESS_CREATE, params)
        answer.add_done_callback(self._created)

    def _created(self, answer: Future[Any]) -> None:
        error = None if answer.cancelled() else answer.exception()
        pending, self._pending = self._pending or [], None
        if answer.cancelled() or error is not None:
            self._refused = True
            log.info("no progress for indexing: the client refused its token (%s)", error)
            return
        for kind, message in pending:
            self._send(kind, message)

    def _send(self, kind: str, message: str) -> None:
        token, progress = self._token, self._ls.work_done_progress
        assert token is not None
        if kind == "begin":
            progress.begin(token, types.WorkDoneProgressBegin(title="tokend", message=message))
        elif kind == "report":
            progress.report(token, types.WorkDoneProgressReport(message=message))
        else:
            progress.end(token, types.WorkDoneProgressEnd(message=message))
            progress.tokens.pop(token, None)


def progress_of(ls: TokendServer) -> Progress | None:
    """$/progress for an index build, when the client said it handles work-done progress. The
    token is created when a build begins, so a request that finds its workspace indexed (or
    being indexed for another request) creates none."""
    caps = ls.client_capabilities
    window = caps.window if caps is not None else None
    if window is None or not window.work_done_progress:
        return None
    return _IndexProgress(ls).tell


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    @server.feature("workspace/fileTokens")
    @rpc
    async def file_tokens(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(FileTokensParams, params)
        workspaces = ls.app.workspaces
        follow(ls, workspaces, p.workspace_uri)
        index = await workspaces.ready(p.workspace_uri, progress_of(ls))
        rels = None if p.paths is None else [index.relative(x) for x in p.paths]
        await workspaces.settled(index, rels)  # the buffers sent before this request count
        if not p.exact:  # off the loop: 100,000 figures and their JSON held it 1.4 s (issue 22)
            return await asyncio.to_thread(_estimates, index, rels)
        service = ls.service
        if p.session_id is not None:
            model = service.sessions.state(p.session_id).data.model
        else:
            model = service.catalog.get(DEFAULT_COUNT_MODEL)
        counter = service.models.counter(model)
        tokenizer = model.tokenizer if counter.exact else None
        figures = await service.workers.run(
            lambda: index.figures(rels, counter.count_text, tokenizer)
        )
        return wire.json_array(map(to_wire_figure, figures))
