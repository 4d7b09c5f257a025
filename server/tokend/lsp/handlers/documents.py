"""textDocument/didOpen, /didChange, /didClose, /didSave: an editor's unsaved text counts.

pygls keeps each connection's open documents (applying incremental changes); after it has,
the buffer's whole text becomes the file's overlay in the shared workspace index, so every
client sees what the agent would send now. Closing or saving drops the overlay: the file on
disk speaks again. Only the latest text is handed over here; re-tagging and figures run on
the workspace's buffer thread (service.workspace.buffers), and requests that read a file's
figures wait for its pending buffers first. Files outside every workspace are ignored; a workspace not yet open is
opened (indexed) by its first document. A connection that goes away (with or without
`didClose`, `shutdown`, `exit`) closes its open documents: their unsaved text stops counting and
is no longer held (issue 17's fuzz: an 8 MB buffer stayed after its connection had gone).
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer

log = logging.getLogger(__name__)


def _path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _folder_holding(folders: list[str], path: Path) -> str | None:
    """The innermost of the client's workspace folders that holds `path`."""
    holding = [
        (len(folder.parts), uri)
        for uri in folders
        if (folder := _path(uri)) is not None and path.is_relative_to(folder)
    ]
    return max(holding)[1] if holding else None


def _set(
    ls: TokendServer, uri: str, text: str | None, kind: str, buffer: str | None = None
) -> None:
    """Set (or drop) the overlay of `uri`; tell the editor hooks what happened (`kind`) with
    the buffer's text (`buffer`, else `text`): a save's bytes on disk are the user's."""
    path = _path(uri)
    if path is None:
        return
    workspaces = ls.app.workspaces
    found = workspaces.index_for(path)
    if found is None and (folder := _folder_holding(ls.workspace_folders, path)) is not None:
        ls.open_folder(folder)
        found = workspaces.index_for(path)
    if found is None:
        return
    index, rel = found
    workspaces.editor_event(index, rel, buffer if buffer is not None else text, kind)
    index.buffers.put(rel, text)  # applied off the loop; readers wait for it (settled)


def close_all(ls: TokendServer) -> None:
    """Every document still open on this connection closed, as by didClose (a workspace is
    never opened for it); pygls's copies dropped too."""
    try:
        uris = list(ls.workspace.text_documents)
    except RuntimeError:  # pygls: never initialized, so no document was opened
        return
    workspaces = ls.app.workspaces
    for uri in uris:
        path = _path(uri)
        found = workspaces.index_for(path) if path is not None else None
        if found is not None:
            index, rel = found
            workspaces.editor_event(index, rel, None, "close")
            index.buffers.put(rel, None)
        ls.workspace.remove_text_document(uri)


def _closing(ls: TokendServer) -> None:
    """close_all, never raising into the connection's other close callbacks."""
    try:
        close_all(ls)
    except Exception:
        log.exception("closing the documents of a connection that went away failed")


def register(server: TokendServer) -> None:
    server.host.on_close(functools.partial(_closing, server))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TokendServer, params: types.DidOpenTextDocumentParams) -> None:
        _set(ls, params.text_document.uri, params.text_document.text, "open")

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TokendServer, params: types.DidChangeTextDocumentParams) -> None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        _set(ls, params.text_document.uri, document.source, "change")

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TokendServer, params: types.DidSaveTextDocumentParams) -> None:
        saved = params.text or ls.workspace.get_text_document(params.text_document.uri).source
        _set(ls, params.text_document.uri, None, "save", saved)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TokendServer, params: types.DidCloseTextDocumentParams) -> None:
        _set(ls, params.text_document.uri, None, "close")
