"""bench/reshape.py's probes that run a tree's own processes without a daemon of the bench's:
a standalone server (listing), the settings (config), start-up (app_root) and the wire edge's
JSON in-process (convert). Each takes the tree's server folder and returns one round's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import app_root, config
from bench.daemon import _Client, _p
from bench.reshape_probes import LISTED_SESSIONS, Figures, _timed_ms
from bench.service_shape import WRITE_SESSIONS

FIGURES = 100_000


def listing(server: Path, shared: dict[str, Any]) -> Figures:
    """`session/list` over LISTED_SESSIONS stored sessions (written by the tree's own code),
    a fresh `tokend lsp --standalone`."""
    with tempfile.TemporaryDirectory(prefix="tkrs-list-") as folder:
        url = f"sqlite:///{folder}/list.sqlite3"
        env = {**os.environ, "PYTHONPATH": f"{server}{os.pathsep}{shared['root']}"}
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[var] = folder
        subprocess.run([sys.executable, "-c", WRITE_SESSIONS, url, str(LISTED_SESSIONS)], env=env,
                       check=True, capture_output=True)  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "--database-url", url, "lsp", "--standalone"],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        client = _Client(proc.stdout.fileno(), proc.stdin.fileno(), proc)
        client.initialize("reshape")
        params = {"workspaceUri": "file:///ws"}
        first = _timed_ms(lambda: client.request("session/list", params), 1)[0]
        later = _timed_ms(lambda: client.request("session/list", params), 10)
        client.close()
    return {
        f"`session/list` of {LISTED_SESSIONS:,}, first call: ms": first,
        f"`session/list` of {LISTED_SESSIONS:,}, later calls: p50 ms": _p(later, 50),
    }


def settings(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/config's processes: the first merge cold and with cattrs loaded, a warm merge,
    `tokend config --json`."""
    tree, folder = server.parent, shared["config_folder"]
    cold = config._measure(tree, folder, "cold")
    loaded = config._measure(tree, folder, "warm-cattrs")
    return {
        "first merge, cold process: ms": cold[0],
        "first merge, cattrs loaded: ms": loaded[0],
        "warm merge: ms": loaded[1],
        "`tokend config --json`: ms": config._config_command(tree, folder),
    }


def start_up(server: Path, shared: dict[str, Any]) -> Figures:
    """bench/app_root's processes on the tree's own store of the 2.7 MB real session."""
    tree, state = server.parent, shared["status_stores"][server]
    env = app_root._env(tree, state["base"], state["db"])
    wall, cpu, peak = app_root._status(env, state["workspace"])
    ready, first = app_root._daemon(env, state["workspace"])
    return {
        "`tokend status`, no daemon: wall ms": wall,
        "`tokend status`, no daemon: CPU ms": cpu,
        "`tokend status`, no daemon: peak MiB": peak,
        "`tokend serve` until ready: s": ready,
        "first `tokend status` through it: ms": first,
        "`create_server` in-process: ms": app_root._create_server(env),
    }


CONVERT = r"""
import json, statistics, sys, time
try:
    from tokend.lsp.file_figures import figure_json
    from tokend.lsp.wire import json_array
except ImportError:  # main before the typed handlers
    from tokend.lsp.handlers.workspace import to_wire_figure as figure_json
    from tokend.lsp.wire import json_array
from tokend.service.workspace.figures import FileFigure
figures = [FileFigure(f"src/pkg{i % 97}/module_{i}.py", 1000 + i, 250 + i % 900, "estimated", False)
           for i in range(int(sys.argv[1]))]
times = []
for _ in range(5):
    started = time.perf_counter()
    text = json_array(map(figure_json, figures))
    times.append(time.perf_counter() - started)
print(json.dumps([statistics.median(times), len(text)]))
"""


def convert(server: Path, shared: dict[str, Any]) -> Figures:
    """100,000 `workspace/fileTokens` figures to JSON text, as each tree's handler writes them
    (in a process of the tree's own; the median of 5)."""
    done = subprocess.run([sys.executable, "-c", CONVERT, str(FIGURES)], capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": str(server)})  # fmt: skip
    seconds, _ = json.loads(done.stdout)
    return {f"{FIGURES:,} file figures to JSON text: s": seconds}
