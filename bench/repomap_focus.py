"""A new focus on a repository of 1,000+ files, through the real daemon: issue 24's "a new
focus on a 1,000-file repository in 100 ms or less, with the daemon running".

Trees: bench.repomap_eval's (REPOMAP_FOCUS_REPOS, default vite 1,569 source files and mypy
1,449, at their pins), each a git checkout of its pin sharing the pinned repository's objects
(`git clone --shared`), as a user's workspace is: the daemon reads its history (the map's
`cochange`: core.repomap.cochange), main before it does not. Per tree and daemon (this branch's, then main's before this work,
BEFORE_REV, in a temporary worktree; a fresh data dir each, one daemon after the other): one
client asks `workspace/fileTokens`, a session of the tree, the first `repoMap/get` (4,096
tokens; it waits for the tags), then waits until the daemon is idle (its background work after
the first map, such as the file figures' exact counts, would share the interpreter with the
maps), the same map again; then FOCUSES new file focuses (source
files drawn with a fixed seed; each one's map asked for the first time) and the eval's task
texts as text focuses (TEXTS of them). Seconds of each request from the client's side; medians
and the slowest.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import repomap_eval_data as data
from bench.baseline import baseline_tree
from bench.daemon import _Client, _env, _Processes
from bench.kernel import _Session
from bench.repomap_eval import BEFORE_REV

ROOT = Path(__file__).resolve().parents[1]
FOCUSES = 20
TEXTS = 10
BUDGET = 4096
REPOS = ("vitejs/vite", "python/mypy")
SETTLE_S = 180.0
IDLE_SHARE = 0.05


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _settle(pid: int) -> float:
    """Seconds until the daemon has used under IDLE_SHARE of a core for 2 s in a row (its
    background work after the first map: the file figures' exact counts), at most SETTLE_S."""
    started, quiet, last = time.perf_counter(), 0, _cpu_s(pid)
    while quiet < 2 and time.perf_counter() - started < SETTLE_S:
        time.sleep(1.0)
        now = _cpu_s(pid)
        quiet, last = (quiet + 1 if now - last < IDLE_SHARE else 0), now
    return time.perf_counter() - started


def _one_daemon(server: Path, tree: Path, files: list[str], texts: list[str]) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkfc-"))
    env = {**_env(base), "PYTHONPATH": str(server)}
    sock = base / "run" / "tokend" / "daemon.sock"
    procs = _Processes(base, env)
    f: dict[str, Any] = {}
    try:
        daemon = procs.daemon(sock)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(sock))
        client = _Client(conn.fileno(), conn.fileno(), conn)
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                      "clientInfo": {"name": "bench-repomap-focus"}})  # fmt: skip
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        s = _Session(client, time.perf_counter())
        uri = tree.as_uri()
        s.request("workspace/fileTokens", {"workspaceUri": uri})
        _, created = s.request("session/create", {"model": "gpt-4o", "workspaceUri": uri})
        params = {"sessionId": created["sessionId"], "budgetTokens": BUDGET}
        f["first_s"] = s.request("repoMap/get", params)[0]
        f["settle_s"] = _settle(daemon.pid)
        f["again"] = [s.request("repoMap/get", params)[0] for _ in range(3)]
        f["focus"] = [
            s.request("repoMap/get", {**params, "focus": {"files": [p], "identifiers": []}})[0]
            for p in files
        ]
        f["text"] = [
            s.request("repoMap/get",
                      {**params, "focus": {"files": [], "identifiers": [], "text": t}})[0]
            for t in texts
        ]  # fmt: skip
        conn.close()
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    return f


def _checkout(repo: str) -> Path:
    """A git checkout of `repo`'s pin in a temporary folder, its objects shared with the pinned
    repository (removed by the caller)."""
    target = Path(tempfile.mkdtemp(prefix="tkfc-tree-")) / repo.replace("/", "+")
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "clone", "-q", "--shared", "--no-checkout", str(data.git_dir(repo)),
                    str(target)], check=True)  # fmt: skip
    subprocess.run([*git, "-C", str(target), "checkout", "-q", data.REPOS[repo][0]], check=True)
    return target


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.0f} (max {max(xs) * 1000:.0f})"


def run() -> str:
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules

    wanted = os.environ.get("REPOMAP_FOCUS_REPOS")
    repos = wanted.split(",") if wanted else list(REPOS)
    load = os.getloadavg()
    lines = [
        "### repomap_focus: a new focus on a repository of 1,000+ files, through the daemon\n",
        f"Real `tokend serve`, one client; medians of {FOCUSES} new file focuses and {TEXTS} "
        "text focuses (the eval's commit messages), ms (slowest in brackets), this branch beside "
        f"main at {BEFORE_REV} in the same run, one daemon after the other, each tree a git "
        "checkout of its pin (this branch reads its history). Load average at "
        f"the start: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min).\n",
        "| tree | source files | daemon | first map s | idle after s | same map ms | "
        "new file focus ms | text focus ms |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for repo in repos:
        tree = data.tree(repo)
        walked = [e.path for e in walk(tree, IgnoreRules(tree)) if not e.skipped]
        source = sorted(p for p in walked if data._is_source(p))
        files = random.Random(7).sample(source, FOCUSES)
        texts = [q.message for q in data.queries(repo, set(source))][:TEXTS]
        checkout = _checkout(repo)
        try:
            sides = {"this branch": _one_daemon(ROOT / "server", checkout, files, texts)}
            with baseline_tree(BEFORE_REV) as before:
                if before is not None:
                    server = before / "server"
                    sides[f"main {BEFORE_REV}"] = _one_daemon(server, checkout, files, texts)
        finally:
            shutil.rmtree(checkout.parent, ignore_errors=True)
        for name, f in sides.items():
            lines.append(f"| {repo} | {len(source):,} | {name} | {f['first_s']:.1f} | "
                         f"{f['settle_s']:.0f} | "
                         f"{_ms(f['again'])} | {_ms(f['focus'])} | {_ms(f['text'])} |")  # fmt: skip
    load = os.getloadavg()
    lines.append(f"\nLoad average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
