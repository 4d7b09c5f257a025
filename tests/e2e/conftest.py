"""The real `tokend lsp --standalone` process over real pipes, on a real SQLite file."""

from __future__ import annotations

import pytest

from tests.conftest import tokend_env
from tests.lsp_client import ProcessClient


@pytest.fixture
async def server(tmp_path):
    db = tmp_path / "tokend.sqlite3"
    client = await ProcessClient.spawn(
        "lsp", "--standalone", cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0
