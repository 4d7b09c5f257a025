"""Issue 21: budget/snapshot reports the prompt cache the last call left (the real daemon over its
socket, SQLite). Oracle: the usage this test sent and the wall clock around the requests."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tests.daemon.lsp_client import LspClient
from tests.daemon.real_daemon import real_daemons
from tokend.daemon import paths


def _append(client: LspClient, sid: str, role: str, text: str, usage: dict | None = None) -> dict:
    message: dict = {"role": role, "parts": [{"type": "text", "text": text}]}
    if usage is not None:
        message["usage"] = usage
    reply = client.request("session/append", {"sessionId": sid, "message": message})
    assert "result" in reply, reply
    return reply["result"]


def test_the_snapshot_says_what_the_prompt_cache_holds_and_for_how_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        client = LspClient.unix(paths.socket_path())
        assert "result" in client.initialize("cache figure")
        sid = client.request("session/create", {"model": "claude-sonnet-4-6"})["result"][
            "sessionId"
        ]
        _append(client, sid, "user", "why does the build fail?")
        before = client.request("budget/snapshot", {"sessionId": sid})["result"]
        assert before["promptCache"] is None  # no call yet
        sent = time.time()
        usage = {"inputTokens": 3, "outputTokens": 40, "cacheReadTokens": 11_515}
        _append(client, sid, "assistant", "looking", {**usage, "cacheWriteTokens": 1_800})
        cache = client.request("budget/snapshot", {"sessionId": sid})["result"]["promptCache"]
        asked = time.time()
        assert cache["cachedTokens"] == 11_515 + 1_800
        assert cache["ttlSeconds"] == 300 and cache["warm"] is True
        done = datetime.fromisoformat(cache["lastCallAt"]).timestamp()
        assert sent - 1 <= done <= asked
        assert datetime.fromisoformat(cache["expiresAt"]).timestamp() == pytest.approx(done + 300)
        assert 300 - (asked - sent) - 1 <= cache["secondsLeft"] <= 300
        # a call that writes 1-hour entries: the lifetime is an hour
        one_hour = {**usage, "cacheWriteTokens": 900, "cacheWrite1hTokens": 900}
        _append(client, sid, "user", "and the tests?")
        _append(client, sid, "assistant", "running them", one_hour)
        cache = client.request("budget/snapshot", {"sessionId": sid})["result"]["promptCache"]
        assert cache["ttlSeconds"] == 3_600 and cache["cachedTokens"] == 11_515 + 900
        assert 3_600 - 60 <= cache["secondsLeft"] <= 3_600
        client.close()


def test_a_one_hour_cache_write_sent_as_documented_is_priced_at_the_one_hour_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`cacheWrite1hTokens` (protocol.md, Usage; what tokend.client.sdk sends) was read as
    `cacheWrite1HTokens` and dropped: the write was priced at the 5-minute rate. Oracle:
    Anthropic's published Claude Sonnet 4.6 prices, $6 per million 1-hour cache-write tokens."""
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        client = LspClient.unix(paths.socket_path())
        assert "result" in client.initialize("one hour")
        sid = client.request("session/create", {"model": "claude-sonnet-4-6"})["result"][
            "sessionId"
        ]
        _append(client, sid, "user", "summarize the repository")
        usage = {"inputTokens": 0, "outputTokens": 0, "cacheWriteTokens": 100_000}
        _append(client, sid, "assistant", "done", {**usage, "cacheWrite1hTokens": 100_000})
        snapshot = client.request("budget/snapshot", {"sessionId": sid})["result"]
        assert snapshot["cost"]["totalUsd"] == pytest.approx(0.60)
        client.close()
