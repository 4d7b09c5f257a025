"""The `server` of the wire tests: `tokend lsp --standalone`'s server in this process
(tests/in_process.py), on a real SQLite file, spoken to over a socket pair."""

from __future__ import annotations

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import ProcessClient


@pytest.fixture
async def server(tmp_path):
    db = tmp_path / "tokend.sqlite3"
    client = await InProcessClient.start(tmp_path, database_url=f"sqlite:///{db}")
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


@pytest.fixture
async def process_server(tmp_path):
    """The real `tokend lsp --standalone` process over real pipes: the --standalone path's
    end-to-end test (the rest speak to `server`, the same server without the process)."""
    db = tmp_path / "tokend.sqlite3"
    client = await ProcessClient.spawn(
        "lsp", "--standalone", cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0
