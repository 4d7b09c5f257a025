"""The "client" summarizer end to end: the real `tokend lsp --standalone` asks the connection
that requested the compaction `session/summarize`, and a real client on the pipes answers
(tests/lsp_client.py's answers). Oracles: the request the client received, the narrative it answered,
the texts this test appended, what session/messages returns."""

from __future__ import annotations

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import AnswerError
from tests.model_servers import GOOD_ANSWER

NARRATIVE = GOOD_ANSWER.format(model="from the editor").strip()


@pytest.fixture
async def client(tmp_path, isolated_dirs):
    config = isolated_dirs / "xdg_config_home" / "tokend"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        '[summarizer]\nchain = ["client", "extractive"]\ntimeout_s = 20\n'
    )
    db = tmp_path / "tokend.sqlite3"
    env = tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    proc = await InProcessClient.start(cwd=tmp_path, env=env)
    await proc.initialize()
    yield proc
    assert await proc.shutdown() == 0


async def _conversation(client) -> tuple[str, list[str]]:
    sid = (await client.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    typed = []
    for i in range(8):
        said = f"request {i}: keep the public API of module {i} stable"
        typed.append(said)
        for role, text in (("user", said), ("assistant", f"done {i} " + "explained " * 900)):
            message = {"role": role, "parts": [{"type": "text", "text": text}]}
            await client.request("session/append", {"sessionId": sid, "message": message})
    return sid, typed


async def test_the_client_writes_the_narrative_and_tokend_keeps_the_users_words(client):
    async def summarize(params):
        return {"summary": NARRATIVE}

    client.answers["session/summarize"] = summarize
    sid, typed = await _conversation(client)
    result = await client.request("session/compact", {"sessionId": sid, "strategy": "full"})
    action = result["actions"][-1]
    assert action["kind"] == "full"
    assert "client summary" in action["detail"] and "client: used" in action["detail"]
    [asked] = client.asked
    assert asked["params"]["sessionId"] == sid
    assert asked["params"]["maxTokens"] >= 256
    assert "## Work state" in asked["params"]["prompt"] and typed[0] in asked["params"]["prompt"]
    live = await client.request("session/messages", {"sessionId": sid})
    summary = live["messages"][0]["parts"][0]["text"]
    assert live["messages"][0]["kind"] == "summary" and NARRATIVE in summary
    assert all(t in summary for t in typed[:-1])


async def test_a_client_that_refuses_or_answers_garbage_falls_back_to_extractive(client):
    answers = iter([AnswerError(-32601, "no model here"), {"text": "wrong shape"}])

    async def summarize(params):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client.answers["session/summarize"] = summarize
    sid, typed = await _conversation(client)
    first = await client.request("session/compact", {"sessionId": sid, "strategy": "full"})
    detail = first["actions"][-1]["detail"]
    assert "client: the client answered with an error (" in detail and "no model here" in detail
    assert detail.endswith("extractive: used")
    for i in range(8, 12):  # more turns, then a second compaction: the garbage answer
        message = {"role": "user", "parts": [{"type": "text", "text": f"more {i} " * 600}]}
        await client.request("session/append", {"sessionId": sid, "message": message})
    second = await client.request("session/compact", {"sessionId": sid, "strategy": "full"})
    detail = second["actions"][-1]["detail"]
    assert "client: the client's answer has no summary string; extractive: used" in detail
    every = await client.request("session/messages", {"sessionId": sid, "includeCompacted": True})
    said = [m["parts"][0]["text"] for m in every["messages"] if m["role"] == "user"]
    assert said[:8] == typed  # nothing lost
