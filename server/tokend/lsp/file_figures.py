"""The workspace feature's figures on the wire: a session's files (files/*) and each workspace
file's figure (workspace/fileTokens), and workspace/didChangeFileTokens to the connections that
asked for a workspace's figures (`follow`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tokend.lsp.wire import to_wire
from tokend.lsp.wire.workspace import (
    DidChangeFileTokensParams,
    FileFigureWire,
    FilesListing,
    MemoryFileWire,
    SessionFileWire,
)
from tokend.service.workspace.figures import FileFigure
from tokend.service.workspace.registry import Workspaces
from tokend.service.workspace.session_files import SessionWorkspace

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer

DID_CHANGE_FILE_TOKENS = "workspace/didChangeFileTokens"


def to_wire_listing(gathered: SessionWorkspace) -> FilesListing:
    """Every file with the tokens of its block as sent; memory files with theirs (0 when
    cut, with the reason); the chunk totals."""
    files = [
        SessionFileWire(f.path, f.read_only, f.tokens, f.dirty, reason=f.reason or None)
        for f in gathered.files
    ]
    memory = [
        MemoryFileWire(m.path, m.scope, m.tokens, cut=m.cut or None, note=m.note or None)
        for m in gathered.memory.entries
    ]
    return FilesListing(
        files,
        memory,
        gathered.chat_tokens,
        gathered.memory_tokens,
        list(gathered.memory.warnings),
    )


def to_wire_figure(figure: FileFigure) -> FileFigureWire:
    """One file's figure: `bytes` on disk (or of the unsaved text), `tokens` of its text."""
    return FileFigureWire(
        figure.path,
        figure.size_bytes,
        figure.tokens,
        figure.basis,
        figure.dirty,
        reason=figure.reason or None,
    )


def figure_json(figure: FileFigure) -> Any:
    """One figure as JSON values (what workspace/fileTokens' array holds)."""
    return to_wire(to_wire_figure(figure))


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
        changed = DidChangeFileTokensParams(workspace_uri, [to_wire_figure(f) for f in figures])
        try:
            if ls.protocol.writer is None:  # the connection is gone
                raise ConnectionError
            ls.protocol.notify(DID_CHANGE_FILE_TOKENS, to_wire(changed))
        except (ConnectionError, OSError):
            stop()

    def notice(message: str) -> None:
        ls.window_log_message(
            types.LogMessageParams(types.MessageType.Warning, f"tokend: {message}")
        )

    subscribed.append(workspaces.subscribe(uri, send, notice))
    ls.host.on_close(stop)  # else the workspace's listeners keep the closed connection's server
