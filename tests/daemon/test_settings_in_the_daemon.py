"""The real daemon applies each workspace's settings, and reads them again when they change.

A workspace's .tokend.toml is written by the test while `tokend serve` runs; the oracle is what
the daemon answers (the snapshot's autocompactThreshold, whether a model is known).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

MODEL = '[models."acme-200k"]\ncontext_window = 200000\nmax_output_tokens = 64000\n'


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _client(daemons: Daemons) -> LspClient:
    daemons.serve()
    client = LspClient.unix(paths.socket_path())
    assert "result" in client.initialize("settings-test")
    return client


def _threshold(client: LspClient, workspace: Path) -> int:
    created = client.request(
        "session/create", {"model": "acme-200k", "workspaceUri": workspace.as_uri()}
    )
    assert "result" in created, created
    snapshot = client.request("budget/snapshot", {"sessionId": created["result"]["sessionId"]})
    return snapshot["result"]["autocompactThreshold"]


def test_each_workspace_gets_its_own_compaction_settings(daemons: Daemons, tmp_path: Path) -> None:
    client = _client(daemons)
    reserved, plain = tmp_path / "reserved", tmp_path / "plain"
    for folder in (reserved, plain):
        folder.mkdir()
    (reserved / ".tokend.toml").write_text(MODEL + "[compaction]\nreserved = 50000\n")
    (plain / ".tokend.toml").write_text(MODEL)
    # `tokend lsp --standalone` in that folder computes 150,000: the daemon must agree.
    assert _threshold(client, reserved) == 150_000
    assert _threshold(client, plain) == 168_000


def test_a_model_declared_while_the_daemon_runs_is_known_a_second_later(
    daemons: Daemons, tmp_path: Path
) -> None:
    client = _client(daemons)
    params = {"model": "acme-late", "workspaceUri": tmp_path.as_uri()}
    assert client.request("session/create", params)["error"]["code"] == -33002  # UnknownModel
    (tmp_path / ".tokend.toml").write_text(
        '[models."acme-late"]\ncontext_window = 32768\nmax_output_tokens = 4096\n'
    )
    time.sleep(1.1)  # the daemon looks at the files at most once a second
    created = client.request("session/create", params)
    assert "result" in created, created


def test_settings_problems_of_a_second_workspace_folder_reach_its_client(
    daemons: Daemons, tmp_path: Path
) -> None:
    """A client that named two folders (VS Code multi-root) hears of the second one's broken
    .tokend.toml as it hears of the first one's: window/showMessage."""
    daemons.serve()
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
    (second / ".tokend.toml").write_text(MODEL + "[compaction]\nreserved = 'lots'\n")
    client = LspClient.unix(paths.socket_path())
    folders = [{"uri": f.as_uri(), "name": f.name} for f in (first, second)]
    params = {"processId": None, "capabilities": {}, "workspaceFolders": folders}
    assert "result" in client.request("initialize", params)
    client.notify("initialized", {})
    created = client.request(
        "session/create", {"model": "acme-200k", "workspaceUri": second.as_uri()}
    )
    assert "result" in created, created
    client.request("daemon/status", None)  # a round trip: what was sent before has arrived
    shown = [n["params"] for n in client.notifications if n["method"] == "window/showMessage"]
    assert len(shown) == 1 and "reserved" in shown[0]["message"], client.notifications


def test_a_workspace_that_sets_the_users_rate_limit_is_told_the_users_applies(
    daemons: Daemons, tmp_path: Path
) -> None:
    """[rate] is the daemon's, one limit for every workspace: the snapshot's rate uses the
    user's tpm_limit, and a client whose .tokend.toml sets another hears why it does not apply
    (on main it heard nothing, and `tokend config` there showed the workspace's value)."""
    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("[rate]\ntpm_limit = 100000\n")
    daemons.serve()
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / ".tokend.toml").write_text(MODEL + "[rate]\ntpm_limit = 10\n")
    client = LspClient.unix(paths.socket_path())
    folders = [{"uri": workspace.as_uri(), "name": workspace.name}]
    params = {"processId": None, "capabilities": {}, "workspaceFolders": folders}
    assert "result" in client.request("initialize", params)
    client.notify("initialized", {})
    created = client.request(
        "session/create", {"model": "acme-200k", "workspaceUri": workspace.as_uri()}
    )
    sid = created["result"]["sessionId"]
    usage = {"inputTokens": 1200, "outputTokens": 300}
    message = {"role": "assistant", "parts": [{"type": "text", "text": "hi"}], "usage": usage}
    appended = client.request("session/append", {"sessionId": sid, "message": message})
    assert "result" in appended, appended
    rate = client.request("budget/snapshot", {"sessionId": sid})["result"]["rate"]
    assert (rate["tpmLimit"], rate["tokensPerMinute"]) == (100_000, 1500)
    shown = [
        n["params"]["message"] for n in client.notifications if n["method"] == "window/showMessage"
    ]
    told = [m for m in shown if "[rate] is read from the user config only" in m]
    assert len(told) == 1 and str(workspace / ".tokend.toml") in told[0], shown
