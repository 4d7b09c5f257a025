"""An editor's open documents, for the workspace feature's textDocument/didOpen, /didChange,
/didClose, /didSave (handlers/workspace.py): an editor's unsaved text counts.

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

import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types

from tokend.core.workspace.document_text import Edit
from tokend.service.workspace.buffers import Text

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


def set_overlay(
    ls: TokendServer, uri: str, text: Text, kind: str, buffer: str | None = None
) -> None:
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


def closing(ls: TokendServer) -> None:
    """close_all, never raising into the connection's other close callbacks."""
    try:
        close_all(ls)
    except Exception:
        log.exception("closing the documents of a connection that went away failed")


def encoding(ls: TokendServer) -> str:
    """The position encoding negotiated at initialize: "utf-16" (LSP's default), "utf-8" or
    "utf-32"."""
    encoding = ls.workspace.position_encoding
    return str(getattr(encoding, "value", encoding) or "utf-16")


def as_edit(change: types.TextDocumentContentChangeEvent) -> Edit:
    """An LSP content change as an edit: a range's (line, character) positions, or none (the
    whole text)."""
    if isinstance(change, types.TextDocumentContentChangePartial):
        start, end = change.range.start, change.range.end
        return Edit(change.text, (start.line, start.character), (end.line, end.character))
    return Edit(change.text)
