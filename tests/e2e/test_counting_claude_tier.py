"""End to end: a Claude session's figures in Claude tokens, through the real `tokend lsp
--standalone` process on a real folder. Oracle: ctok's count of the exact text the client got
(the text as one user message, less the family's measured frame)."""

from __future__ import annotations

from pathlib import Path

import ctok
import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient

V3_FRAME = 7  # count_tokens of a one-message request around its content (v3 family)


def claude_v3(text: str) -> int:
    return int(ctok.token_count(text, "3.0")) - V3_FRAME


def block(path: str, text: str) -> str:
    return f"{path}\n```\n{text}\n```"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    for i in range(6):
        (root / "pkg" / f"mod{i}.py").write_text(
            "".join(
                f"def handler_{i}_{j}(request, *, retries: int = 3) -> dict[str, str]:\n"
                f"    return {{'status': 'ok', 'id': '{i}-{j}'}}\n\n\n"
                for j in range(25)
            )
            + f"class Service{i}:\n    def run(self):\n        return handler_{i}_0(None)\n"
        )
    return root


@pytest.fixture
async def server(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    client = await InProcessClient.start(
        cwd=tmp_path,
        env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", HOME=str(home)),
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


async def test_a_claude_session_counts_in_claude_tokens(
    server: InProcessClient, tree: Path
) -> None:
    uri = tree.as_uri()
    created = await server.request(
        "session/create", {"model": "claude-opus-4-6", "workspaceUri": uri}
    )
    sid = created["sessionId"]
    text = (tree / "pkg" / "mod1.py").read_text()

    exact = await server.request(
        "workspace/fileTokens",
        {"workspaceUri": uri, "paths": ["pkg/mod1.py"], "exact": True, "sessionId": sid},
    )
    assert (exact[0]["tokens"], exact[0]["basis"]) == (claude_v3(text), "exact")

    listing = await server.request("files/add", {"sessionId": sid, "paths": ["pkg/mod1.py"]})
    assert listing["files"][0]["tokens"] == claude_v3(block("pkg/mod1.py", text))

    for budget in (256, 1024):
        repo_map = await server.request("repoMap/get", {"sessionId": sid, "budgetTokens": budget})
        assert repo_map["basis"] == "exact" and repo_map["text"]
        assert repo_map["tokens"] == claude_v3(repo_map["text"]) <= budget

    said = "Please rename handler_1_0 to handle_first and keep the tests green."
    await server.request(
        "session/append",
        {"sessionId": sid, "message": {"role": "user", "parts": [{"type": "text", "text": said}]}},
    )
    snapshot = await server.request("budget/snapshot", {"sessionId": sid})
    bases = {b["category"]: b["basis"] for b in snapshot["breakdown"]}
    assert bases["messages"] == "exact" and bases["chatFiles"] == "exact"


CTOK_VERSIONS = {"claude-opus-4-6": "3.0", "claude-opus-4-7": "4.7", "claude-opus-4-8": "4.8"}


async def test_each_family_counts_its_own_request_frame(server: InProcessClient) -> None:
    # Oracle: ctok's count of the one-message request (content and the family's frame). The
    # gauge adds the measured 20 per message (measured on v3, whose 7-token frame is in it)
    # and each family's frame difference from v3 once: so what it shows beyond the request is
    # the same 20 - 7 = 13 for every family (main counted v4.7 4 under, v4.8 1 over).
    said = "Rename handler_1_0 to handle_first, then run the tests in pkg/ and report back."
    beyond = {}
    for model, version in CTOK_VERSIONS.items():
        created = await server.request("session/create", {"model": model})
        sid = created["sessionId"]
        message = {"role": "user", "parts": [{"type": "text", "text": said}]}
        await server.request("session/append", {"sessionId": sid, "message": message})
        snapshot = await server.request("budget/snapshot", {"sessionId": sid})
        assert snapshot["estimated"] is True
        beyond[model] = snapshot["usedTokens"] - int(ctok.token_count(said, version))
    assert beyond == dict.fromkeys(CTOK_VERSIONS, 13)
