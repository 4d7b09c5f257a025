"""session/list is scoped to the connection's workspace unless it names one or asks for all."""

from __future__ import annotations

import pytest

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths


def _editor(root: str | None) -> LspClient:
    client = LspClient.unix(paths.socket_path())
    folders = [{"uri": root, "name": "w"}] if root else None
    reply = client.request(
        "initialize",
        {"processId": None, "rootUri": root, "workspaceFolders": folders, "capabilities": {}},
    )
    assert "result" in reply
    client.notify("initialized", {})
    return client


def _listed(client: LspClient, **params: object) -> set[str]:
    reply = client.request("session/list", params)
    return {s["sessionId"] for s in reply["result"]["sessions"]}


def test_session_list_defaults_to_the_connections_workspace(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    one, two = (tmp_path / "one").as_uri(), (tmp_path / "two").as_uri()
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        in_one, no_workspace = _editor(one), _editor(None)
        made = {
            uri: in_one.request("session/create", {"model": "gpt-4o", "workspaceUri": uri})[
                "result"
            ]["sessionId"]
            for uri in (one, two)
        }
        assert _listed(in_one) == {made[one]}
        assert _listed(in_one, workspaceUri=two) == {made[two]}
        assert _listed(in_one, all=True) == set(made.values())
        assert _listed(no_workspace) == set(made.values())
        both = in_one.request("session/list", {"workspaceUri": one, "all": True})
        assert both["error"]["code"] == -32602
