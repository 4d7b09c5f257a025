"""Three agents and two editors on one workspace, on one real daemon: each agent hears of its
own session only; an editor that asks for the workspace's newest session ("active") follows
that one, and one that attaches to another session switches to it.

The oracle is what each connection actually received on its socket: the `budget/didChange`
notifications read up to a `daemon/status` round trip made after every change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT = 30.0


def _connect(name: str, workspace: str, options: dict[str, Any] | None = None) -> LspClient:
    client = LspClient.unix(socket_path())
    params = {
        "processId": None,
        "clientInfo": {"name": name},
        "rootUri": workspace,
        "workspaceFolders": [{"uri": workspace, "name": "app"}],
        "capabilities": {},
        "initializationOptions": options or {},
    }
    assert "result" in client.request("initialize", params, timeout=WAIT)
    client.notify("initialized", {})
    return client


def _append(client: LspClient, sid: str, text: str) -> None:
    message = {"role": "user", "parts": [{"type": "text", "text": text}]}
    client.result("session/append", {"sessionId": sid, "message": message})


def _heard(client: LspClient) -> set[str]:
    """The sessions of every budget/didChange this connection has received so far."""
    client.result("daemon/status", None)  # the daemon sent what it had before this reply
    sessions = {
        n["params"]["sessionId"] for n in client.notifications if n["method"] == "budget/didChange"
    }
    client.notifications.clear()
    return sessions


def test_three_agents_and_two_editors_on_one_workspace_hear_their_own_sessions(
    monkeypatch, tmp_path: Path
):
    workspace = (tmp_path / "app").as_uri()
    (tmp_path / "app").mkdir()
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        agents, sessions = [], []
        for n in (1, 2, 3):  # each agent starts while the others' sessions exist
            agent = _connect(f"agent-{n}", workspace)
            agents.append(agent)
            create = {"model": "gpt-4o", "workspaceUri": workspace, "title": f"agent {n}"}
            sessions.append(agent.result("session/create", create)["sessionId"])
            _append(agent, sessions[-1], f"task {n}")
        # an editor that asks for the workspace's newest session, as both editor clients do
        newest = _connect("editor-1", workspace, {"session": "active"})
        # an editor that follows the newest, then switches to the first agent's session
        switching = _connect("editor-2", workspace, {"session": "active"})
        assert _heard(newest) == _heard(switching) == {sessions[2]}
        switching.result("session/attach", {"sessionId": sessions[0]})
        for agent in agents:
            _heard(agent)  # what they heard while the others were created: checked below

        for n, (agent, sid) in enumerate(zip(agents, sessions, strict=True), 1):
            _append(agent, sid, f"step {n}")
        for n, (agent, sid) in enumerate(zip(agents, sessions, strict=True), 1):
            assert _heard(agent) == {sid}, f"agent {n} heard another agent's session"
        assert _heard(newest) == {sessions[2]}
        assert _heard(switching) == {sessions[0]}, "the editor still hears the session it left"

        # a connection with no workspace and no options follows nothing until it asks
        idle = LspClient.unix(socket_path())
        assert "result" in idle.initialize("cli")
        _append(agents[0], sessions[0], "more")
        assert _heard(idle) == set()
        for client in (*agents, newest, switching, idle):
            client.close()


def test_an_agent_still_hears_a_session_it_appended_to_after_attaching_another(monkeypatch):
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        agent = LspClient.unix(socket_path())
        assert "result" in agent.initialize("agent")
        first = agent.result("session/create", {"model": "gpt-4o"})["sessionId"]
        _append(agent, first, "one")
        second = agent.result("session/create", {"model": "gpt-4o"})["sessionId"]
        _heard(agent)
        other = LspClient.unix(socket_path())
        assert "result" in other.initialize("other")
        _append(other, first, "from elsewhere")
        _append(other, second, "from elsewhere")
        assert _heard(agent) == {first, second}
        agent.close()
        other.close()
