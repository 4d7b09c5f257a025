"""The settings feature: workspace/didChangeConfiguration re-reads the settings of the client's
folders (their .tokend.toml and the user's config.toml) now, rather than at the next periodic
check; its `settings` carry nothing tokend uses."""

from __future__ import annotations

from lsprotocol import types

from tokend.lsp.server import TokendServer


def did_change_configuration(ls: TokendServer, params: types.DidChangeConfigurationParams) -> None:
    for uri in [None, *ls.workspace_folders]:
        ls.service.models.settings_changed(uri)


NOTIFICATIONS = {types.WORKSPACE_DID_CHANGE_CONFIGURATION: did_change_configuration}
