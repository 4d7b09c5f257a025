"""The real `tokend lsp --standalone` driven by pytest-lsp's client, as editors' test suites do."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import tokend_env

# pytest-lsp starts the server from a static config, before any fixture runs: give it its own
# folders here (never the user's data dir), removed when the module is done.
_HOME = Path(tempfile.mkdtemp(prefix="tokend-pytest-lsp-"))
_ENV = tokend_env(
    TOKEND_DATABASE_URL=f"sqlite:///{_HOME}/tokend.sqlite3",
    XDG_DATA_HOME=str(_HOME / "data"),
    XDG_CONFIG_HOME=str(_HOME / "config"),
    XDG_STATE_HOME=str(_HOME / "state"),
    XDG_CACHE_HOME=str(_HOME / "cache"),
)


@pytest.fixture(scope="module", autouse=True)
def _remove_home():
    yield
    shutil.rmtree(_HOME, ignore_errors=True)


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "tokend", "lsp", "--standalone"],
        server_env=_ENV,
    )
)
async def client(lsp_client: LanguageClient):
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(),
        client_info=types.ClientInfo(name="pytest-lsp"),
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def test_a_session_through_pytest_lsp(client: LanguageClient):
    created = await client.protocol.send_request_async(
        "session/create", {"model": "gpt-4o", "title": "via pytest-lsp"}
    )
    sid = created.sessionId
    message = {"role": "user", "parts": [{"type": "text", "text": "count me"}]}
    appended = await client.protocol.send_request_async(
        "session/append", {"sessionId": sid, "message": message}
    )
    assert appended.version == 1 and appended.tokens > 3
    snapshot = await client.protocol.send_request_async("budget/snapshot", {"sessionId": sid})
    # the message, and the 3 tokens that prime an OpenAI reply
    assert snapshot.usedTokens == appended.tokens + 3 and snapshot.estimated is True
    status = await client.protocol.send_request_async("daemon/status", None)
    assert status.connections[0].clientName == "pytest-lsp"
