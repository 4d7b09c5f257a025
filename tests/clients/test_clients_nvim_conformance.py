"""Neovim 0.11's own LSP client (headless, no tokend plugin) against the real `tokend lsp
--standalone` and the forwarder `tokend lsp` with its daemon: the second workspace folder
Neovim adds is served, and nothing tokend writes on stderr lands in Neovim's LSP log (where
every stderr chunk is an ERROR) when Neovim sends workspace/didChangeConfiguration.

The oracles are what Neovim's client received and Neovim's own lsp.log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clients.test_clients_nvim import WAIT_SECONDS, nvim_binary
from tests.daemon.real_daemon import real_daemons

SCRIPT = Path(__file__).with_name("nvim_multiroot.lua")


def _run(tmp_path: Path, server: list[str]) -> dict[str, Any]:
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, name in ((a, "main.py"), (b, "lib.py")):
        folder.mkdir()
        (folder / name).write_text("x = 1\n")
    result = tmp_path / "result.json"
    lua_cmd = "{" + ", ".join(json.dumps(part) for part in server) + "}"
    env_dirs = {"XDG_STATE_HOME": tmp_path / "nvim-state", "XDG_CONFIG_HOME": tmp_path / "cfg"}
    env = {**os.environ, **{k: str(v) for k, v in env_dirs.items()}}
    subprocess.run(
        [
            str(nvim_binary()),
            "--headless",
            "--clean",
            "-n",
            "--cmd",
            f"let g:folder_a = '{a}' | let g:folder_b = '{b}' | let g:result_path = '{result}'",
            "--cmd",
            f"lua vim.g.server_cmd = {lua_cmd}",
            "-c",
            f"luafile {SCRIPT}",
        ],
        cwd=a,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=WAIT_SECONDS * 3,
        check=False,
    )
    out = json.loads(result.read_text())
    assert out["ok"], out.get("err")
    log = Path(out["log_path"])
    out["log"] = log.read_text(errors="replace") if log.exists() else ""
    return out


@pytest.mark.parametrize("server", ["standalone", "forwarder"])
def test_neovim_multiroot_and_a_quiet_stderr(server, monkeypatch, tmp_path):
    command = [sys.executable, "-m", "tokend", "lsp"]
    with real_daemons(monkeypatch) as daemons:
        monkeypatch.setenv("XDG_DATA_HOME", str(daemons.base / "data"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(daemons.base / "cache"))
        out = _run(tmp_path, [*command, "--standalone"] if server == "standalone" else command)
    reply = out["reply"]
    assert not reply.get("err"), reply
    [figure] = reply["result"]
    assert figure["dirty"] is True and figure["bytes"] == out["buffer_bytes"]
    assert "stderr" not in out["log"] and "ERROR" not in out["log"], out["log"][-3000:]
