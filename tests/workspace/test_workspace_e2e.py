"""End to end in the test's process: `tokend lsp --standalone`'s server (tests/in_process.py),
a real folder, real watchdog events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError
from tokend.adapters.tokenizers import load_encoding


def o200k(text: str) -> int:
    return len(load_encoding("o200k_base").encode_ordinary(text))


def block(path: str, text: str) -> str:
    return f"{path}\n```\n{text}\n```"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "pkg" / "models.py").write_text(
        "class User:\n    def name(self):\n        return 'x'\n\n\ndef make_user():\n    return User()\n"
    )
    (root / "pkg" / "views.py").write_text(
        "from pkg.models import make_user\n\n\ndef show():\n    return make_user().name()\n"
    )
    (root / "build" / "out.py").write_text("IGNORED = 1\n")
    (root / "debug.log").write_text("ignored\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (root / "CLAUDE.md").write_text("Always run the tests.\n")
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


async def notification_for(client: InProcessClient, path: str) -> dict[str, Any]:
    while True:
        params = await client.next_notification("workspace/didChangeFileTokens", timeout=10)
        found = [f for f in params["files"] if f["path"] == path]
        if found:
            return found[0]


async def test_file_tokens_honour_ignores_and_refuse_binaries(server: InProcessClient, tree: Path):
    uri = tree.as_uri()
    files = await server.request("workspace/fileTokens", {"workspaceUri": uri})
    by_path = {f["path"]: f for f in files}
    assert "build/out.py" not in by_path and "debug.log" not in by_path
    assert by_path["blob.bin"]["basis"] == "skipped" and by_path["blob.bin"]["tokens"] == 0
    models = by_path["pkg/models.py"]
    assert models["bytes"] == (tree / "pkg" / "models.py").stat().st_size
    assert models["basis"] == "estimate" and models["dirty"] is False

    exact = await server.request(
        "workspace/fileTokens", {"workspaceUri": uri, "paths": ["pkg/models.py"], "exact": True}
    )
    assert exact == [
        {
            "path": "pkg/models.py",
            "bytes": models["bytes"],
            "tokens": o200k((tree / "pkg" / "models.py").read_text()),
            "basis": "exact",
            "dirty": False,
        }
    ]
    with pytest.raises(RpcError) as refused:
        await server.request("workspace/fileTokens", {"workspaceUri": uri, "paths": ["../x"]})
    assert refused.value.code == -32602 and "outside the workspace" in refused.value.message


async def test_a_save_and_an_unsaved_buffer_move_the_figures(server: InProcessClient, tree: Path):
    uri = tree.as_uri()
    await server.request("workspace/fileTokens", {"workspaceUri": uri})
    views = tree / "pkg" / "views.py"
    grown = views.read_text() + "\n\ndef more():\n    return 'a much longer body ' * 40\n"
    views.write_text(grown)
    saved = await notification_for(server, "pkg/views.py")
    assert saved["bytes"] == len(grown.encode()) and saved["dirty"] is False

    unsaved = grown + "# not saved yet\n" * 50
    server.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": views.as_uri(),
                "languageId": "python",
                "version": 1,
                "text": unsaved,
            }
        },
    )
    dirty = await notification_for(server, "pkg/views.py")
    assert dirty["dirty"] is True and dirty["bytes"] == len(unsaved.encode())
    exact = await server.request(
        "workspace/fileTokens", {"workspaceUri": uri, "paths": ["pkg/views.py"], "exact": True}
    )
    assert exact[0]["tokens"] == o200k(unsaved) and exact[0]["dirty"] is True
    server.notify("textDocument/didClose", {"textDocument": {"uri": views.as_uri()}})
    closed = await notification_for(server, "pkg/views.py")
    assert closed["dirty"] is False and closed["bytes"] == len(grown.encode())


async def test_session_files_memory_and_map_reach_assembly(server: InProcessClient, tree: Path):
    uri = tree.as_uri()
    sid = (await server.request("session/create", {"model": "gpt-4o", "workspaceUri": uri}))[
        "sessionId"
    ]
    listing = await server.request("files/add", {"sessionId": sid, "paths": ["pkg/views.py"]})
    views_text = (tree / "pkg" / "views.py").read_text()
    assert listing["files"] == [
        {
            "path": "pkg/views.py",
            "readOnly": False,
            "tokens": o200k(block("pkg/views.py", views_text)),
            "dirty": False,
        }
    ]
    claude = [m for m in listing["memory"] if m["path"].endswith("CLAUDE.md")]
    assert claude and claude[0]["scope"] == "project"

    snapshot = await server.request("budget/snapshot", {"sessionId": sid})
    breakdown = {b["category"]: b["tokens"] for b in snapshot["breakdown"]}
    assert breakdown["chatFiles"] == listing["chatFilesTokens"]
    assert breakdown["memory"] == listing["memoryTokens"]

    repo_map = await server.request("repoMap/get", {"sessionId": sid, "budgetTokens": 200})
    assert "pkg/models.py:" in repo_map["text"] and "make_user" in repo_map["text"]
    assert repo_map["tokens"] == o200k(repo_map["text"]) <= 200

    await server.request(
        "session/append",
        {
            "sessionId": sid,
            "message": {"role": "user", "parts": [{"type": "text", "text": "fix show"}]},
        },
    )
    assembled = await server.request("context/assemble", {"sessionId": sid, "format": "openai"})
    chunks = {c["name"]: c["tokens"] for c in assembled["chunks"]}
    assert chunks["chatFiles"] > 0 and chunks["readOnlyFiles"] > 0 and chunks["repoMap"] > 0
    contents = [m["content"] for m in assembled["messages"]]
    assert any("def show()" in str(c) for c in contents)

    with pytest.raises(RpcError) as refused:
        await server.request("files/add", {"sessionId": sid, "paths": ["blob.bin"]})
    assert refused.value.code == -32602 and "binary" in refused.value.message
    dropped = await server.request("files/drop", {"sessionId": sid, "paths": ["pkg/views.py"]})
    assert dropped["files"] == []
