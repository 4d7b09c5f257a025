"""textDocument/didOpen, /didChange, /didClose, /didSave: an editor's unsaved text counts.

Each connection keeps its open documents (`ls.documents`, service.workspace.documents; pygls
keeps no copy): a didChange's edits are only recorded on the loop and applied beside it, in
order, when the text is next taken. The buffer's whole text becomes the file's overlay in the
shared workspace index, so every client sees what the agent would send now. Closing or saving
drops the overlay: the file on disk speaks again. Only how to get the latest text is handed
over here; applying the edits, re-tagging and figures run on the workspace's buffer thread
(service.workspace.buffers), and requests that read a file's figures wait for its pending
buffers first. Files outside every workspace are ignored; a workspace not yet open is
opened (indexed) by its first document. A connection that goes away (with or without
`didClose`, `shutdown`, `exit`) closes its open documents: their unsaved text stops counting and
is no longer held (issue 17's fuzz: an 8 MB buffer stayed after its connection had gone).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types

from tokend.core.document_text import Edit
from tokend.service.workspace.buffers import Text
from tokend.service.workspace.documents import FLUSH_AFTER

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


def _set(ls: TokendServer, uri: str, text: Text, kind: str, buffer: str | None = None) -> None:
    """Set (or drop) the overlay of `uri` (`text`: the text, or how to get it); tell the editor
    hooks what happened (`kind`) with the buffer's text when it is at hand (`buffer`, else
    `text` if a string): a save's bytes on disk are the user's."""
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
    told = buffer if buffer is not None else text if isinstance(text, str) else None
    workspaces.editor_event(index, rel, told, kind)
    index.buffers.put(rel, text)  # applied off the loop; readers wait for it (settled)


def close_all(ls: TokendServer) -> None:
    """Every document still open on this connection closed, as by didClose (a workspace is
    never opened for it)."""
    uris = list(ls.documents.uris())
    if not uris:
        return
    workspaces = ls.app.workspaces
    for uri in uris:
        path = _path(uri)
        found = workspaces.index_for(path) if path is not None else None
        if found is not None:
            index, rel = found
            workspaces.editor_event(index, rel, None, "close")
            index.buffers.put(rel, None)
        ls.documents.close(uri)


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
        document = params.text_document
        ls.documents.open(document.uri, document.text, _encoding(ls))
        _set(ls, document.uri, document.text, "open")

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TokendServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        document = ls.documents.get(uri)
        if document is None:
            log.info("didChange of a document that is not open: ignored")
            return
        pending = document.change(map(_edit, params.content_changes))
        if pending > FLUSH_AFTER:  # nobody took the text for a while: bring it up to date
            _ = asyncio.get_running_loop().run_in_executor(None, document.flush)
        _set(ls, uri, document.text, "change")

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TokendServer, params: types.DidSaveTextDocumentParams) -> None:
        document = ls.documents.get(params.text_document.uri)
        saved = params.text or (document.text() if document is not None else None)
        _set(ls, params.text_document.uri, None, "save", saved)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TokendServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.documents.close(params.text_document.uri)
        _set(ls, params.text_document.uri, None, "close")


def _encoding(ls: TokendServer) -> str:
    """The position encoding negotiated at initialize: "utf-16" (LSP's default), "utf-8" or
    "utf-32"."""
    encoding = ls.workspace.position_encoding
    return str(getattr(encoding, "value", encoding) or "utf-16")


def _edit(change: types.TextDocumentContentChangeEvent) -> Edit:
    """An LSP content change as an edit: a range's (line, character) positions, or none (the
    whole text)."""
    if isinstance(change, types.TextDocumentContentChangePartial):
        start, end = change.range.start, change.range.end
        return Edit(change.text, (start.line, start.character), (end.line, end.character))
    return Edit(change.text)
