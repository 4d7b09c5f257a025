"""Issue 21: the automatic compaction an append starts at the autocompact threshold prunes by the
prompt cache's economics too (tokend's server in the test's process, SQLite). With the cache warm, the batch that
takes the gauge under the threshold and rewrites least is cleared, not every old result: the
other way out, a summary, would rewrite the whole cache. Oracles: which results `session/messages`
shows pruned, and the usage figures this test sent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import real_daemons


def _ok(reply: dict[str, Any]) -> Any:
    assert "result" in reply, reply
    return reply["result"]


def _log(day: int, lines: int) -> str:
    return "".join(
        f"day {day} line {n}: worker {n % 7} restarted after a timeout\n" for n in range(lines)
    )


def test_the_automatic_prune_at_the_threshold_clears_the_batch_the_warm_cache_prefers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two old results: a short log, ~8k tokens of the agent's talk, then a long log; the last
    call puts the gauge ~2k tokens over the threshold. Clearing the long log alone gets under it
    and rewrites only the short turns after it; clearing the short log too would rewrite the
    talk. On main the automatic path cleared both (OpenCode's rule at the threshold)."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[compaction]\nprune_protect_tokens = 2000\nprune_minimum_tokens = 500\n")
    with real_daemons(monkeypatch) as daemons:
        client = daemons.standalone()
        assert "result" in client.initialize("threshold prune")
        created = _ok(
            client.request(
                "session/create", {"model": "claude-sonnet-4-6", "contextWindow": 200_000}
            )
        )
        sid = created["sessionId"]
        threshold = _ok(client.request("budget/snapshot", {"sessionId": sid}))[
            "autocompactThreshold"
        ]

        def append(role: str, parts: list[dict[str, Any]], usage: dict | None = None) -> None:
            message: dict[str, Any] = {"role": role, "parts": parts}
            if usage is not None:
                message["usage"] = usage
            _ok(client.request("session/append", {"sessionId": sid, "message": message}))

        def call(n: int, read: int) -> dict[str, int]:
            return {"inputTokens": 10, "outputTokens": 50, "cacheReadTokens": read,
                    "cacheWriteTokens": 2_000 + n}  # fmt: skip

        def read_file(n: int) -> list[dict[str, Any]]:
            return [{"type": "toolCall", "callId": f"c{n}", "name": "Read", "input": {"day": n}}]

        def result(n: int, lines: int) -> list[dict[str, Any]]:
            return [
                {"type": "toolResult", "callId": f"c{n}", "name": "Read", "output": _log(n, lines)}
            ]

        append("user", [{"type": "text", "text": "why do the workers restart?"}])
        append("assistant", read_file(0), call(0, 0))
        append("tool", result(0, 120))
        talk = " ".join(f"finding {n}: worker {n % 7} backs off" for n in range(1_000))
        append("assistant", [{"type": "text", "text": talk}], call(1, 3_000))
        append("assistant", read_file(1), call(2, 5_000))
        append("tool", result(1, 500))
        append("user", [{"type": "text", "text": "and the alerts?"}])
        append("assistant", [{"type": "text", "text": "checking"}], call(3, 20_000))
        append("user", [{"type": "text", "text": "go on"}])
        before = _ok(client.request("budget/snapshot", {"sessionId": sid}))
        assert before["usedTokens"] < threshold
        # the last call leaves the gauge ~2k tokens over the threshold: the append compacts
        over = {"inputTokens": 10, "outputTokens": 50, "cacheReadTokens": threshold + 2_000}
        append("assistant", [{"type": "text", "text": "the alerts fire on restarts"}], over)
        after = _ok(client.request("budget/snapshot", {"sessionId": sid}))
        assert after["compactions"] == 1 and after["usedTokens"] < threshold, after
        listed = _ok(client.request("session/messages", {"sessionId": sid}))["messages"]
        pruned = {
            part["callId"]: bool(part.get("pruned"))
            for m in listed
            for part in m["parts"]
            if part["type"] == "toolResult"
        }
        assert pruned == {"c0": False, "c1": True}, pruned
        client.close()
