"""The workspace feature: files/add, /drop, /list (the files a session sends, with what each
costs), workspace/fileTokens (and workspace/didChangeFileTokens to the connections that asked),
workspace/didChangeWorkspaceFolders, and an editor's documents (textDocument/didOpen,
/didChange, /didSave, /didClose: lsp/documents.py).

A client may name several workspace folders (initialize's workspaceFolders, then added and
removed ones): each is its own workspace, opened (indexed, watched) as it is named, and an
editor's documents go to the workspace whose folder holds them. A removed folder stops being
this connection's, and its workspace is released once nobody else uses it."""

from __future__ import annotations

import asyncio
import functools
import logging

from lsprotocol import types

from tokend.lsp import documents
from tokend.lsp.file_figures import figure_json, follow, to_wire_listing
from tokend.lsp.handler_table import features
from tokend.lsp.progress import progress_of
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import JsonText, json_array
from tokend.lsp.wire.workspace import (
    FilesChangeParams,
    FilesListing,
    FilesListParams,
    FileTokensParams,
)
from tokend.service.workspace.documents import FLUSH_AFTER
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.session_files import change_files, session_workspace

log = logging.getLogger(__name__)

DEFAULT_COUNT_MODEL = "gpt-4o"  # o200k_base: exact counts when no session names a model


async def add(ls: TokendServer, params: FilesChangeParams) -> FilesListing:
    ls.watch(params.session_id)
    workspaces, p = ls.app.workspaces, params
    return to_wire_listing(
        await change_files(workspaces, p.session_id, p.paths, read_only=p.read_only)
    )


async def drop(ls: TokendServer, params: FilesChangeParams) -> FilesListing:
    ls.watch(params.session_id)
    workspaces, p = ls.app.workspaces, params
    return to_wire_listing(await change_files(workspaces, p.session_id, p.paths, read_only=None))


async def list_files(ls: TokendServer, params: FilesListParams) -> FilesListing:
    return to_wire_listing(await session_workspace(ls.app.workspaces, params.session_id))


async def file_tokens(ls: TokendServer, params: FileTokensParams) -> JsonText:
    """A JSON array of FileFigureWire, written one figure at a time (100,000 of them)."""
    p, workspaces = params, ls.app.workspaces
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
    figures = await service.workers.run(lambda: index.figures(rels, counter.count_text, tokenizer))
    return json_array(map(figure_json, figures))


def _estimates(index: WorkspaceIndex, rels: list[str] | None) -> JsonText:
    """The estimated figures of `rels` (every file when None) as a JSON array (a thread's work:
    100,000 of them take a second)."""
    return json_array(map(figure_json, index.each_figure(rels, None, None)))


def did_change_folders(ls: TokendServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    removed = {folder.uri for folder in params.event.removed}
    folders = [uri for uri in ls.workspace_folders if uri not in removed]
    added = [f.uri for f in params.event.added if f.uri not in folders]
    ls.workspace_folders = folders + list(dict.fromkeys(added))
    ls.workspace_uri = ls.workspace_folders[0] if ls.workspace_folders else None
    for uri in added:
        ls.open_folder(uri)
    for uri in removed:  # released once nobody else uses it
        ls.leave_workspaces(uri)


def did_open(ls: TokendServer, params: types.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    ls.documents.open(document.uri, document.text, documents.encoding(ls))
    documents.set_overlay(ls, document.uri, document.text, "open")


def did_change(ls: TokendServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    document = ls.documents.get(uri)
    if document is None:
        log.info("didChange of a document that is not open: ignored")
        return
    pending = document.change(map(documents.as_edit, params.content_changes))
    if pending > FLUSH_AFTER:  # nobody took the text for a while: bring it up to date
        _ = asyncio.get_running_loop().run_in_executor(None, document.flush)
    documents.set_overlay(ls, uri, document.text, "change")


def did_save(ls: TokendServer, params: types.DidSaveTextDocumentParams) -> None:
    document = ls.documents.get(params.text_document.uri)
    saved = params.text or (document.text() if document is not None else None)
    documents.set_overlay(ls, params.text_document.uri, None, "save", saved)


def did_close(ls: TokendServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.documents.close(params.text_document.uri)
    documents.set_overlay(ls, params.text_document.uri, None, "close")


FEATURES = features(
    {
        "files/add": add,
        "files/drop": drop,
        "files/list": list_files,
        "workspace/fileTokens": file_tokens,
    }
)
NOTIFICATIONS = {
    types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS: did_change_folders,
    types.TEXT_DOCUMENT_DID_OPEN: did_open,
    types.TEXT_DOCUMENT_DID_CHANGE: did_change,
    types.TEXT_DOCUMENT_DID_SAVE: did_save,
    types.TEXT_DOCUMENT_DID_CLOSE: did_close,
}


def connect(server: TokendServer) -> None:
    """A connection that goes away closes its open documents (lsp/documents.py)."""
    server.host.on_close(functools.partial(documents.closing, server))
