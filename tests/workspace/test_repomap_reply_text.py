"""`repoMap/get`'s reply is written beside the event loop, and the same map asked again is not
written again (lsp/handlers/repomap.py).

Found (issue 18's figures): the same map again took 2.07x the tree before the reshape: the
reply grew to every ranked file with its score (issue 24), and the loop built a wire object
for each of them, converted, looked at and encoded them, at every request, though the map's
own cache handed back the same map. Judged by what the client received and by the wire objects
made, where (the loop's thread or a worker's) and how many, not by a clock.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tokend.lsp.handlers import repomap as handler
from tokend.lsp.wire import JsonText
from tokend.service.repomap.session_map import RepoMap


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("from .engine import start_engine\n")
    (root / "pkg" / "engine.py").write_text("def start_engine():\n    return make_pool()\n")
    (root / "pkg" / "pool.py").write_text("def make_pool():\n    return []\n")
    (root / "app.py").write_text("from pkg import start_engine\n\nstart_engine()\n")
    return root


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of each ranked file's wire object made from now on."""
    threads: list[int] = []
    real = handler.RankedFileWire

    def counting(*args: Any) -> Any:
        threads.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(handler, "RankedFileWire", counting)
    return threads


async def test_the_same_map_again_is_not_written_again_nor_on_the_loop(
    tmp_path: Path, tree: Path, made: list[int]
) -> None:
    db, home = tmp_path / "tokend.sqlite3", tmp_path / "home"
    home.mkdir()
    client = await InProcessClient.start(
        tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}", HOME=str(home))
    )
    try:
        await client.initialize()
        created = await client.request(
            "session/create", {"model": "gpt-4o", "workspaceUri": tree.as_uri()}
        )
        ask = {"sessionId": created["sessionId"], "budgetTokens": 400,
               "focus": {"files": ["app.py"], "identifiers": []}}  # fmt: skip
        first = await client.request("repoMap/get", ask)
        files = len(first["files"])
        assert files >= 2 and "start_engine" in first["text"]
        loop_thread = client.hosted.thread.ident
        assert len(made) == files and loop_thread not in made  # main: all on the loop
        again = await client.request("repoMap/get", ask)
        assert again == first
        assert len(made) == files  # main: as many again
        other = await client.request("repoMap/get", {**ask, "budgetTokens": 300})
        assert other["budgetTokens"] == 300 and len(made) == files + len(other["files"])
    finally:
        assert await client.shutdown() == 0


def test_the_text_is_what_protocol_md_lays_out() -> None:
    """Field for field in protocol.md's order, as json.dumps writes it (the connection sends it
    as it is)."""
    found = RepoMap(
        'a.py:\n│def f(x="é"):\n', 9, (("a.py", 0.123456789), ("b/c.py", 1e-7)), "exact", 400
    )
    text = handler.reply_text(found)
    assert isinstance(text, JsonText)
    expected = {
        "text": found.text,
        "tokens": 9,
        "files": [{"path": "a.py", "score": 0.123457}, {"path": "b/c.py", "score": 0.0}],
        "basis": "exact",
        "budgetTokens": 400,
    }
    assert text == json.dumps(expected)


def test_a_score_json_cannot_carry_is_left_to_the_connection_to_refuse() -> None:
    found = RepoMap("", 0, (("a.py", float("nan")),), "estimate", 100)
    assert not isinstance(handler.reply_text(found), str)
