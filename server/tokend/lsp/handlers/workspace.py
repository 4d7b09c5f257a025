"""workspace/fileTokens, and workspace/didChangeFileTokens to the connections that asked."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types

from tokend.adapters.file_index import resolve_inside
from tokend.lsp import wire
from tokend.service.workspace.figures import FileFigure
from tokend.service.workspace.registry import Progress, Workspaces, workspaces_of

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer

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


def follow(ls: TokendServer, workspaces: Workspaces, uri: str) -> None:
    """Send this connection workspace/didChangeFileTokens for the workspace from now on."""
    key = workspaces.key(uri)
    followed: set[str] = ls.__dict__.setdefault("_tokend_workspaces", set())
    if key in followed:
        return
    followed.add(key)
    unsubscribe: Callable[[], None] | None = None

    def send(workspace_uri: str, figures: list[FileFigure]) -> None:
        files = [to_wire_figure(f) for f in figures]
        try:
            if ls.protocol.writer is None:  # the connection is gone
                raise ConnectionError
            ls.protocol.notify(
                DID_CHANGE_FILE_TOKENS, {"workspaceUri": workspace_uri, "files": files}
            )
        except (ConnectionError, OSError):
            if unsubscribe is not None:
                unsubscribe()

    def notice(message: str) -> None:
        ls.window_log_message(
            types.LogMessageParams(types.MessageType.Warning, f"tokend: {message}")
        )

    unsubscribe = workspaces.subscribe(uri, send, notice)


def progress_of(ls: TokendServer) -> Progress | None:
    """$/progress for an index build, when the client said it handles work-done progress."""
    caps = ls.client_capabilities
    window = caps.window if caps is not None else None
    if window is None or not window.work_done_progress:
        return None
    token = f"tokend-index-{next(_tokens)}"
    ls.work_done_progress.create(token)

    def tell(kind: str, message: str) -> None:
        if kind == "begin":
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="tokend", message=message)
            )
        elif kind == "report":
            ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=message))
        else:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    return tell


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    @server.feature("workspace/fileTokens")
    @rpc
    async def file_tokens(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(FileTokensParams, params)
        workspaces = workspaces_of(ls.service)
        follow(ls, workspaces, p.workspace_uri)
        index = await workspaces.ready(p.workspace_uri, progress_of(ls))
        rels = None if p.paths is None else [resolve_inside(index.root, x) for x in p.paths]
        if not p.exact:
            return wire.json_array(map(to_wire_figure, index.figures(rels, None, None)))
        service = ls.service
        if p.session_id is not None:
            model = service.state(p.session_id).data.model
        else:
            model = service.catalog.get(DEFAULT_COUNT_MODEL)
        counter = service.counter(model)
        tokenizer = model.tokenizer if counter.exact else None
        figures = await service.run(lambda: index.figures(rels, counter.count_text, tokenizer))
        return wire.json_array(map(to_wire_figure, figures))
