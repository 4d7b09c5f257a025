"""workspace/didChangeWorkspaceFolders and workspace/didChangeConfiguration.

A client may name several workspace folders (initialize's workspaceFolders, then added and
removed ones): each is its own workspace, opened (indexed, watched) as it is named, and an
editor's documents go to the workspace whose folder holds them (documents.py). A removed
folder stops being this connection's, and its workspace is released once nobody else uses it. didChangeConfiguration re-reads the settings of the
client's folders (their .tokend.toml and the user's config.toml) now, rather than at the
next periodic check; its `settings` carry nothing tokend uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from tokend.lsp.server import TokendServer


def register(server: TokendServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
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

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: TokendServer, params: types.DidChangeConfigurationParams
    ) -> None:
        for uri in [None, *ls.workspace_folders]:
            ls.service.models.settings_changed(uri)
