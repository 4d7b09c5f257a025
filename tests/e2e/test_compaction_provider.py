"""A provider's own compaction, end to end: `tokend lsp --standalone` over pipes on a real
SQLite file, fed the shapes Anthropic's server-side compaction (a `compaction` content block,
`usage.iterations` with the compaction billed apart) and OpenAI's /responses/compact (an
encrypted compaction item) return.

Oracles: the figures this test sends (each iteration's tokens), the prices it declares and
prices itself, the request context/assemble builds, and the state after a restart."""

from __future__ import annotations

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tests.lsp_client import RpcError

IN, OUT, READ, WRITE = 3e-6, 15e-6, 0.3e-6, 3.75e-6  # $/token, declared below
SUMMARY = "The user is porting the parser; tokenizer done, grammar next. Files: src/parse.py."
EARLIER = "please port the parser to the new grammar, keep src/parse.py's API"
COMPACTION_ITER = {"type": "compaction", "inputTokens": 180_000, "outputTokens": 3_500}
MESSAGE_ITER = {
    "type": "message",
    "inputTokens": 4_200,
    "outputTokens": 400,
    "cacheReadTokens": 0,
    "cacheWriteTokens": 1_000,
}


def price(it: dict) -> float:
    return (
        it["inputTokens"] * IN
        + it["outputTokens"] * OUT
        + it.get("cacheReadTokens", 0) * READ
        + it.get("cacheWriteTokens", 0) * WRITE
    )


@pytest.fixture
def env(tmp_path, isolated_dirs):
    folder = isolated_dirs / "xdg_config_home" / "tokend"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(
        '[models."acme-claude"]\ncontext_window = 200000\nmax_output_tokens = 32000\n'
        'provider = "anthropic"\ntokenizer = "o200k_base"\n'
        f"input_cost_per_token = {IN}\noutput_cost_per_token = {OUT}\n"
        f"cache_read_input_token_cost = {READ}\ncache_creation_input_token_cost = {WRITE}\n"
    )
    return tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{tmp_path / 'tokend.sqlite3'}")


async def spawn(env, cwd) -> InProcessClient:
    client = await InProcessClient.start(cwd=cwd, env=env)
    await client.initialize()
    return client


def text(value: str) -> dict:
    return {"type": "text", "text": value}


async def append(client, sid, role, parts, **extra) -> dict:
    message = {"role": role, "parts": parts, **extra}
    return await client.request("session/append", {"sessionId": sid, "message": message})


async def test_anthropic_compaction_block_is_a_boundary_and_every_iteration_is_billed(
    env, tmp_path
):
    client = await spawn(env, tmp_path)
    sid = (await client.request("session/create", {"model": "acme-claude"}))["sessionId"]
    await append(client, sid, "user", [text(EARLIER)])
    usage = {"inputTokens": 900, "outputTokens": 300, "cacheWriteTokens": 2_000}
    await append(client, sid, "assistant", [text("working on it " * 40)], usage=usage)
    await append(client, sid, "user", [text("go on")])
    before = await client.request("budget/snapshot", {"sessionId": sid})

    top = {k: v for k, v in MESSAGE_ITER.items() if k != "type"}  # Anthropic: excludes compaction
    reply = [
        {"type": "compaction", "provider": "anthropic", "summary": SUMMARY},
        text("Grammar ported; running the suite next."),
    ]
    usage = {**top, "iterations": [COMPACTION_ITER, MESSAGE_ITER]}
    boundary = (await append(client, sid, "assistant", reply, usage=usage))["messageId"]
    after = await client.request("budget/snapshot", {"sessionId": sid})

    # The gauge follows the iteration after the compaction: what the next request re-sends.
    assert after["usedTokens"] == 4_200 + 1_000 + 400 and after["estimated"] is False
    assert after["usedTokens"] < before["usedTokens"] + 4_000  # the 180k context is gone
    assert after["compactions"] == before["compactions"] + 1
    assert after["lastCall"]["inputTokens"] == 4_200
    # Every iteration billed: totals and cost include the compaction's.
    assert after["totals"]["inputTokens"] == before["totals"]["inputTokens"] + 184_200
    assert after["totals"]["outputTokens"] == before["totals"]["outputTokens"] + 3_900
    expected = before["cost"]["totalUsd"] + price(COMPACTION_ITER) + price(MESSAGE_ITER)
    assert after["cost"]["totalUsd"] == pytest.approx(expected, abs=1e-6)

    live = (await client.request("session/messages", {"sessionId": sid}))["messages"]
    assert [m["messageId"] for m in live] == [boundary]
    assert live[0]["parts"][0] == {
        "type": "compaction",
        "provider": "anthropic",
        "summary": SUMMARY,
    }
    every = await client.request("session/messages", {"sessionId": sid, "includeCompacted": True})
    earlier = every["messages"][:-1]
    assert len(earlier) == 3 and all(not m["live"] for m in earlier)
    assert {m["compactedBy"] for m in earlier} == {boundary}

    # Anthropic gets its compaction block back; the earlier turns are not sent.
    sent = await client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    blocks = [b for m in sent["messages"] for b in m["content"] if isinstance(m["content"], list)]
    assert {"type": "compaction", "content": SUMMARY} in blocks
    assert EARLIER not in str(sent)
    # Another format reads it as a summary, never as the user's message.
    sent = await client.request("context/assemble", {"sessionId": sid, "format": "openai"})
    first = sent["messages"][0]
    assert first["role"] == "system" and SUMMARY in first["content"]
    assert "anthropic" in first["content"] and EARLIER not in str(sent)

    # Added after the call: the gauge moves by the message's own count.
    added = await append(client, sid, "user", [text("now the docs")])
    grown = await client.request("budget/snapshot", {"sessionId": sid})
    assert grown["usedTokens"] == after["usedTokens"] + added["tokens"]
    assert await client.shutdown() == 0

    again = await spawn(env, tmp_path)  # a restart gives the same session
    reloaded = await again.request("budget/snapshot", {"sessionId": sid})
    for key in ("usedTokens", "estimated", "compactions", "totals", "cost", "version"):
        assert reloaded[key] == grown[key], key
    relisted = await again.request("session/messages", {"sessionId": sid})
    assert [m["messageId"] for m in relisted["messages"]][0] == boundary
    assert len(relisted["messages"]) == 2
    assert await again.shutdown() == 0


async def test_openai_compaction_item_goes_back_as_the_item(env, tmp_path):
    client = await spawn(env, tmp_path)
    sid = (await client.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    for i in range(3):
        await append(client, sid, "user", [text(f"step {i}: " + "details " * 400)])
        usage = {"inputTokens": 1_000 * (i + 1), "outputTokens": 200}
        await append(client, sid, "assistant", [text(f"done {i}")], usage=usage)
    before = await client.request("budget/snapshot", {"sessionId": sid})
    item = {"type": "compaction", "provider": "openai", "opaque": "gAAAAB-enc", "id": "cmp_1"}
    compact_usage = {
        "inputTokens": 3_500,
        "outputTokens": 600,
        "iterations": [{"type": "compaction", "inputTokens": 3_500, "outputTokens": 600}],
    }
    await append(client, sid, "assistant", [item], usage=compact_usage)
    await append(client, sid, "user", [text("step 3: continue")])  # the kept user message
    after = await client.request("budget/snapshot", {"sessionId": sid})
    # No figure describes the compacted context: it is counted, the item as its 600 tokens.
    assert after["estimated"] is True and 600 < after["usedTokens"] < before["usedTokens"]
    assert after["totals"]["inputTokens"] == before["totals"]["inputTokens"] + 3_500

    sent = await client.request("context/assemble", {"sessionId": sid, "format": "openai"})
    assert sent["messages"][0] == {
        "type": "compaction",
        "encrypted_content": "gAAAAB-enc",
        "id": "cmp_1",
    }
    assert sent["messages"][-1] == {"role": "user", "content": "step 3: continue"}
    assert "details" not in str(sent)
    sent = await client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    assert "encrypted" in str(sent["system"]) and "gAAAAB" not in str(sent)
    assert await client.shutdown() == 0


async def test_compaction_parts_and_iterations_are_checked(env, tmp_path):
    client = await spawn(env, tmp_path)
    sid = (await client.request("session/create", {"model": "acme-claude"}))["sessionId"]
    await append(client, sid, "user", [text("hi")])
    part = {"type": "compaction", "provider": "anthropic", "summary": SUMMARY}
    with pytest.raises(RpcError, match="on a user message"):
        await append(client, sid, "user", [part])
    usage = {"inputTokens": 10, "outputTokens": 5, "iterations": [COMPACTION_ITER]}
    with pytest.raises(RpcError, match="no compaction part"):
        await append(client, sid, "assistant", [text("x")], usage=usage)
    with pytest.raises(RpcError, match="needs a 'summary'"):
        await append(client, sid, "assistant", [{"type": "compaction", "provider": "anthropic"}])
    with pytest.raises(RpcError, match="provider"):
        await append(client, sid, "assistant", [{**part, "provider": "gemini"}])
    snapshot = await client.request("budget/snapshot", {"sessionId": sid})
    assert snapshot["version"] == 1 and snapshot["compactions"] == 0  # nothing written
    assert await client.shutdown() == 0


async def test_tokends_summary_after_a_provider_boundary_survives_a_restart(env, tmp_path):
    """The messages a provider's compaction left behind are unmarked in the store; once a
    tokend summary covers the boundary, a reload must still leave them out."""
    client = await spawn(env, tmp_path)
    sid = (await client.request("session/create", {"model": "acme-claude"}))["sessionId"]
    await append(client, sid, "user", [text(EARLIER)])
    part = {"type": "compaction", "provider": "anthropic", "summary": SUMMARY}
    usage = {
        "inputTokens": 4_200,
        "outputTokens": 400,
        "iterations": [COMPACTION_ITER, MESSAGE_ITER],
    }
    await append(client, sid, "assistant", [part, text("ported")], usage=usage)
    for i in range(8):
        await append(client, sid, "user", [text(f"turn {i} " + "more work " * 900)])
    done = await client.request("session/compact", {"sessionId": sid, "strategy": "full"})
    assert done["actions"][-1]["kind"] == "full"
    live = await client.request("session/messages", {"sessionId": sid})
    snapshot = await client.request("budget/snapshot", {"sessionId": sid})
    assert await client.shutdown() == 0

    again = await spawn(env, tmp_path)
    assert await again.request("session/messages", {"sessionId": sid}) == live
    reloaded = await again.request("budget/snapshot", {"sessionId": sid})
    assert reloaded["usedTokens"] == snapshot["usedTokens"]
    sent = await again.request("context/assemble", {"sessionId": sid, "format": "openai"})
    assert EARLIER not in str(sent["messages"][1:])  # only inside the summary, if at all
    assert await again.shutdown() == 0
