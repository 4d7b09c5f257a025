"""What a file says reaches the repo map's rank whole: a rare identifier a file says once,
among hundreds of words it says more often, still finds that file for a task's text that names
it (the 256 most frequent sub-words a file kept before dropped it), through `repoMap/get` on
`tokend lsp --standalone`'s server in the test's process (tests/in_process.py) and a real folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient

COMMON = 400  # words each file says three times (more than the 256 kept before)


def _chatter(seed: str) -> str:
    """COMMON words, each said three times, in a module's docstring (no names to tag)."""
    words = " ".join(f"{seed}{i:03d}x" for i in range(COMMON))
    return f'"""{words}\n{words}\n{words}\n"""\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / "app" / "ledger.py").write_text(
        _chatter("ledger")
        + "# the quarterly_rollover_guard flag is read here once\n"
        + "def post(entry):\n    return entry\n"
    )
    for name in ("audit", "report", "export"):
        (root / "app" / f"{name}.py").write_text(
            _chatter(name) + f"def {name}_run(x):\n    return x\n"
        )
    return root


@pytest.fixture
async def server(tmp_path: Path):
    db = tmp_path / "tokend.sqlite3"
    home = tmp_path / "home"
    home.mkdir()
    client = await InProcessClient.start(
        tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}", HOME=str(home))
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


async def test_a_rare_word_a_file_says_once_finds_it(server: InProcessClient, tree: Path):
    sid = (
        await server.request("session/create", {"model": "gpt-4o", "workspaceUri": tree.as_uri()})
    )["sessionId"]
    text = "Fix quarterly_rollover_guard: it is ignored after a restart"
    got = await server.request(
        "repoMap/get",
        {"sessionId": sid, "budgetTokens": 400,
         "focus": {"files": [], "identifiers": [], "text": text}},
    )  # fmt: skip
    files = [f["path"] for f in got["files"]]
    assert files[0] == "app/ledger.py"
    assert got["files"][0]["score"] > got["files"][1]["score"]  # ahead, not tied
