"""Issue 21 through tokend's server in the test's process (tests/in_process.py, SQLite): budget/snapshot reports the prompt
cache the last call left, and a prune that would not pay for the warm cache waits. Oracles: the
usage this test sent, the wall clock around the requests, Anthropic's published prices."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient


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
        client = daemons.standalone()
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
        client = daemons.standalone()
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


def test_a_prune_that_would_not_pay_for_the_warm_cache_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """session/compact prune on the real daemon, the cache warm (the calls were just made): two
    old logs (~29k tokens) under ~240k tokens of later talk would cost more to rewrite than they
    save before the window fills, so nothing is cleared and the skip says why; the messages sent
    stay as they were (what context/assemble builds before and after)."""
    with real_daemons(monkeypatch) as daemons:
        client = daemons.standalone()
        assert "result" in client.initialize("prune policy")
        sid = client.request("session/create", {"model": "claude-sonnet-4-6"})["result"][
            "sessionId"
        ]
        _append(client, sid, "user", "read the logs")
        read = 0
        for i, lines in enumerate((900, 900, 2_400)):
            call = {"type": "toolCall", "callId": f"c{i}", "name": "Read", "input": {"n": i}}
            usage = {"inputTokens": 10, "outputTokens": 50, "cacheReadTokens": read}
            message = {"role": "assistant", "parts": [call], "usage": usage}
            message["usage"]["cacheWriteTokens"] = 13_000
            reply = client.request("session/append", {"sessionId": sid, "message": message})
            assert "result" in reply, reply
            read += 13_000
            log = "".join(f"day {i} line {n}: worker {n % 7} restarted\n" for n in range(lines))
            result = {"type": "toolResult", "callId": f"c{i}", "name": "Read", "output": log}
            reply = client.request(
                "session/append", {"sessionId": sid, "message": {"role": "user", "parts": [result]}}
            )
            assert "result" in reply, reply
        talk = " ".join(f"finding {n}: worker {n % 7} backs off" for n in range(8_000))
        for turn in ("what did you find?", "and the alerts?"):
            _append(client, sid, "user", turn)
            _append(
                client,
                sid,
                "assistant",
                talk,
                {"inputTokens": 10, "outputTokens": 50, "cacheReadTokens": read},
            )
        params = {"sessionId": sid, "format": "anthropic"}
        before = client.request("context/assemble", params)["result"]["messages"]
        reply = client.request("session/compact", {"sessionId": sid, "strategy": "prune"})
        [action] = reply["result"]["actions"]
        assert action["kind"] == "skip", action
        assert (
            "the prompt cache is warm" in action["detail"] and "would not pay" in action["detail"]
        )
        assert client.request("context/assemble", params)["result"]["messages"] == before
        client.close()
