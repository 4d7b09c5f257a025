"""`tokend statusline codex [ROLLOUT]`: a Codex session's status line, from a rollout written
as Codex writes it, through the real daemon (started by the test, or by the command).

Oracles: the figures written into the rollout by the test (the last call's input, output and
reasoning; the rate limits' percentages and reset times), and the daemon's own budget/snapshot
over another connection for tokend's price.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, live_pids, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 60.0
T = "2026-11-26T10:00:00.000Z"
WINDOW = 272_000


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Any:
    with real_daemons(monkeypatch) as runtime:
        monkeypatch.setenv("CODEX_HOME", str(runtime.base / "codex"))
        monkeypatch.setenv("NO_COLOR", "1")
        yield runtime


def _line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": T, "type": kind, "payload": payload})


def _usage(input_: int, cached: int, output: int, reasoning: int) -> dict[str, int]:
    return {
        "input_tokens": input_,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_output_tokens": reasoning,
        "total_tokens": input_ + output,
    }


def _limits(five_hour: float, seven_day: float, now: float) -> dict[str, Any]:
    return {
        "primary": {"used_percent": five_hour, "window_minutes": 300, "resets_at": int(now + 7800)},
        "secondary": {
            "used_percent": seven_day,
            "window_minutes": 10080,
            "resets_at": int(now + 3 * 86400 + 4 * 3600 + 60),
        },
    }


def _response(text: str, last: dict[str, int], total: dict[str, int], limits: Any) -> list[str]:
    info = {"total_token_usage": total, "last_token_usage": last, "model_context_window": WINDOW}
    return [
        _line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        _line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]}),
        _line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"done: {text}"}]}),
        _line("event_msg", {"type": "token_count", "info": info, "rate_limits": limits}),
    ]  # fmt: skip


def _rollout(home: Path, name: str, model: str, responses: list[list[str]]) -> Path:
    folder = home / "sessions" / "2026" / "11" / "26"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-11-26T10-00-00-{name}.jsonl"
    head = [
        _line("session_meta", {"id": name, "timestamp": T, "cwd": "/", "cli_version": "0.58.0"}),
        _line("turn_context", {"cwd": "/", "model": model, "effort": "medium"}),
    ]
    path.write_text("\n".join(head + [r for response in responses for r in response]) + "\n")
    return path


def _in_window(last: dict[str, int]) -> int:
    """What the window holds after a call, as Codex counts it: its input (cached included) and
    output, less the reasoning that is not sent back."""
    return last["input_tokens"] + last["output_tokens"] - last["reasoning_output_tokens"]


def _statusline(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tokend", "statusline", "codex", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _until(*args: str, says: str) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    while says not in (line := _statusline(*args)):
        assert time.monotonic() < deadline, line
        time.sleep(0.2)
    return line


FIRST = _usage(90_000, 80_000, 2_000, 800)
SECOND = _usage(120_000, 100_000, 3_000, 1_500)
TOTAL = _usage(210_000, 180_000, 5_000, 2_300)


def test_a_codex_rollouts_figures_through_the_daemon_as_it_grows(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve("--idle-timeout", "0")
    now = time.time()
    path = _rollout(
        daemons.base / "codex",
        "0199a",
        "gpt-5-codex",
        [
            _response("one", FIRST, FIRST, _limits(10, 3, now)),
            _response("two", SECOND, TOTAL, _limits(42.4, 12, now)),
        ],
    )
    line = _until(str(path), says="compacts at")
    used = _in_window(SECOND)
    parts = line.split(" · ")
    assert parts[:3] == [
        "gpt-5-codex",
        f"{round(used / 1000)}k/272k",
        f"{100 * used / WINDOW:.0f}%",
    ]
    assert parts[3] == "compacts at 240k" and parts[5].startswith("5h 42% ↻2h"), parts
    assert parts[6:] == ["7d 12% ↻3d4h"]  # no cache segment for Codex, no compaction yet
    client = LspClient.initialized(socket_path(), "test")
    try:
        followed = client.result("follow/start", {"agent": "codex", "path": str(path)})
        session_id = followed["transcripts"][0]["sessionId"]
        snapshot = client.result("budget/snapshot", {"sessionId": session_id})
    finally:
        client.close()
    assert snapshot["usedTokens"] == used and snapshot["contextWindow"] == WINDOW
    assert parts[4] == f"${snapshot['cost']['totalUsd']:.2f}"
    assert not any(p.startswith("cache") for p in parts)  # Codex's prompt cache: not shown

    # Codex compacts, then answers again with new rate limits: the next refresh shows both
    after = _usage(30_000, 0, 1_000, 200)
    with path.open("a") as out:
        out.write(_line("compacted", {"message": "summary of the work so far"}) + "\n")
        total = _usage(240_000, 180_000, 6_000, 2_500)
        out.write("\n".join(_response("three", after, total, _limits(55, 13, now))) + "\n")
    # The rate limits are read from the rollout's end, the gauge from the follower's import:
    # either can show first under load. Wait for the gauge of the reply after the compaction.
    line = _until(str(path), says=f" · {round(_in_window(after) / 1000)}k/272k · ")
    assert "compacted ×1" in line and "5h 55% ↻2h" in line and "7d 13% ↻3d4h" in line


def test_without_a_rollout_the_one_codex_wrote_last(daemons: Daemons) -> None:
    daemons.serve("--idle-timeout", "0")
    now = time.time()
    home = daemons.base / "codex"
    older = _rollout(home, "0199b", "gpt-5", [_response("a", FIRST, FIRST, _limits(1, 1, now))])
    os.utime(older, (now - 600, now - 600))
    _rollout(home, "0199c", "gpt-5-codex", [_response("b", SECOND, SECOND, _limits(2, 2, now))])
    line = _until(says="compacts at")
    assert line.startswith(f"gpt-5-codex · {round(_in_window(SECOND) / 1000)}k/272k")
    # the older session is written again: it becomes the line
    with older.open("a") as out:
        out.write("\n".join(_response("c", FIRST, SECOND, _limits(7, 7, now))) + "\n")
    line = _until(says="5h 7%")
    assert line.startswith(f"gpt-5 · {round(_in_window(FIRST) / 1000)}k/272k")


def test_with_no_daemon_codexs_own_figures_at_once_then_tokends(daemons: Daemons) -> None:
    now = time.time()
    path = _rollout(
        daemons.base / "codex",
        "0199d",
        "gpt-5-codex",
        [_response("a", SECOND, SECOND, _limits(42, 12, now))],
    )
    used = _in_window(SECOND)
    first = _statusline(str(path))
    assert first.startswith(
        f"gpt-5-codex · {round(used / 1000)}k/272k · {100 * used / WINDOW:.0f}% · 5h 42%"
    )
    assert first.endswith("7d 12% ↻3d4h · tokend starting")
    line = _until(str(path), says="compacts at")  # the command started the daemon behind it
    assert line.startswith(f"gpt-5-codex · {round(used / 1000)}k/272k")
    assert socket_path().exists() and live_pids("tokend serve", str(daemons.base))
    picked = _statusline("--segments", "model,rate").split(" · ")  # the newest rollout
    assert picked[0] == "gpt-5-codex" and picked[1].startswith("5h 42% ↻2h")
    assert picked[2:] == ["7d 12% ↻3d4h"]


def test_statusline_line_refuses_an_unknown_agent(daemons: Daemons) -> None:
    daemons.serve("--idle-timeout", "0")
    client = LspClient.initialized(socket_path(), "test")
    try:
        for params, says in (
            ({"given": {}, "agent": "gemini"}, "agent"),
            ({"given": {"transcript_path": 5}, "agent": "codex"}, "transcript_path"),
            ({"given": {"transcript_path": "r.jsonl"}, "agent": "codex"}, "absolute"),
        ):
            error = client.request("statusline/line", params)["error"]
            assert error["code"] == -32602 and says in error["message"], (params, error)
    finally:
        client.close()
    assert (
        _statusline("/no/such/rollout.jsonl")
        == "tokend: no Codex rollout at /no/such/rollout.jsonl"
    )


def test_statusline_help_names_codex_and_the_parser_hands_a_rollout_on(daemons: Daemons) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "tokend", "statusline", "--help"],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert shown.returncode == 0, shown.stderr
    usage = " ".join(shown.stdout.split())
    assert "{claude-code,codex}" in usage and "ROLLOUT" in usage, shown.stdout
    now = time.time()
    path = _rollout(
        daemons.base / "codex",
        "0199e",
        "gpt-5-codex",
        [_response("a", SECOND, SECOND, _limits(42, 12, now))],
    )
    # an option before `statusline` takes the argument parser's way: the rollout reaches it
    store = f"sqlite:///{daemons.base / 'tokend.sqlite3'}"
    done = subprocess.run(
        [sys.executable, "-m", "tokend", "--database-url", store, "statusline", "codex", str(path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    used = _in_window(SECOND)
    assert done.stdout.startswith(f"gpt-5-codex · {round(used / 1000)}k/272k"), done.stdout
    _until(str(path), says="compacts at")  # the daemon it started, before the test ends
