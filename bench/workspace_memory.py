"""Memory after indexing a 100,000-file workspace, once its connection closed (issue 17), on
the real `tokend serve`, beside main before the latest tree work (BEFORE_REV) in the same run.

A generated tree: FILES small Python files (one definition and a call each, ~74 bytes: the
issue's 7.4 MB) in folders of 100, after a WARM_FILES tree opened and closed the same way (what
the first index and tags load, modules and vocabularies, stays for the daemon's life and is not
the big workspace's). An editor connects, creates a session on the tree, asks for
`workspace/fileTokens` (the first index) and `repoMap/get` (every file tagged), then closes its
connection; the workspace is released once its last user left. RSS (/proc VmRSS) before, with
the workspace open, and SETTLE_S after the close; then a second open-and-close of the same
tree (what stays, stays once, or grows?). A reply that takes longer than REPLY_LIMIT_S
stops that daemon's run (said in the section).

`python -m bench.run workspace_memory` prints the section.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree
from bench.daemon import _env, _Processes, _rss_mib, _unix_client

# main before issue 22's fourth tree work (41dd9a0: before its second; 3cc1d35: before the trust work)
BEFORE_REV = os.environ.get("WORKSPACE_MEMORY_BEFORE_REV", "96d3eb5")
FILES = int(os.environ.get("BENCH_WORKSPACE_MEMORY_FILES", "100000"))
WARM_FILES = 2_000  # a small workspace first: what the first use of indexing and tags loads
SETTLE_S = 5.0
REPLY_LIMIT_S = 600.0


def slow_request(client: Any, method: str, params: Any, limit_s: float = REPLY_LIMIT_S) -> Any:
    """A request whose reply may take minutes (bench.daemon's client waits 30 s a read)."""
    msg_id = client.start_request(method, params)
    deadline = time.monotonic() + limit_s
    while True:
        try:
            return client.reply(msg_id)
        except TimeoutError:
            if time.monotonic() > deadline:
                raise


def make_tree(root: Path, files: int = FILES) -> int:
    """`files` small Python files under `root`; their total bytes."""
    total = 0
    for i in range(files):
        folder = root / f"pkg{i // 10_000}" / f"mod{i // 100}"
        if i % 100 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        text = f"def handler_{i}(request):\n    return request.items[{i % 97}]\n\nhandler_{i}(0)\n"
        (folder / f"f{i}.py").write_text(text)
        total += len(text)
    return total


def _open_and_close(sock: Path, tree: Path, pid: int) -> dict[str, float]:
    """One editor: a session on `tree`, the first index, every file tagged; then it leaves."""
    client = _unix_client(sock, "editor")
    session = client.request("session/create", {"model": "gpt-4o", "workspaceUri": tree.as_uri()})
    began = time.monotonic()
    one = {
        "workspaceUri": tree.as_uri(),
        "paths": [next(tree.rglob("*.py")).relative_to(tree).as_posix()],
    }
    slow_request(client, "workspace/fileTokens", one)  # answered once the index is built
    slow_request(client, "repoMap/get", {"sessionId": session["sessionId"]})
    took = time.monotonic() - began
    open_rss = _rss_mib(pid)
    client.close()
    time.sleep(SETTLE_S)
    return {"took": took, "open": open_rss, "closed": _rss_mib(pid)}


def measure(server_dir: Path, tree: Path, warm: Path) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkwm-"))
    env = {**_env(base), "PYTHONPATH": str(server_dir), "XDG_CACHE_HOME": str(base / "cache")}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    result: dict[str, Any] = {"error": None, "rounds": []}
    try:
        daemon = procs.daemon(sock)
        time.sleep(1.0)
        result["before"] = _rss_mib(daemon.pid)
        result["warm"] = _open_and_close(sock, warm, daemon.pid)["closed"]
        for _ in range(2):
            result["rounds"].append(_open_and_close(sock, tree, daemon.pid))
    except Exception as exc:  # a timeout: said in the section
        result["error"] = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    return result


def run() -> str:
    tree_root = Path(tempfile.mkdtemp(prefix="tkwt-"))
    try:
        tree, warm = tree_root / "ws", tree_root / "warm"
        size = make_tree(tree)
        make_tree(warm, WARM_FILES)
        runs = [("tokend", measure(ROOT / "server", tree, warm))]
        with baseline_tree(BEFORE_REV) as base:
            if base is not None:
                runs.append((f"before ({BEFORE_REV})", measure(base / "server", tree, warm)))
    finally:
        shutil.rmtree(tree_root, ignore_errors=True)
    return _section(runs, size)


def _section(runs: list[tuple[str, dict[str, Any]]], size: int) -> str:
    lines = [
        "### Memory after indexing a 100,000-file workspace (bench/workspace_memory.py)\n",
        f"A generated tree of {FILES:,} small Python files ({size / 1e6:.1f} MB), after a "
        f"{WARM_FILES:,}-file one opened and closed the same way (what the first index and tags "
        "load stays for the daemon's life). An editor creates a session on it, waits for `workspace/fileTokens` (the first index) and "
        "`repoMap/get` (every file tagged), then closes its connection (the workspace is "
        f"released with its last user); RSS {SETTLE_S:.0f} s later; twice per daemon. Same "
        f"run: today's daemon and main before this work ({BEFORE_REV}).\n",
        "| daemon | RSS at start → after a 2,000-file workspace | 1st: indexed in / open / "
        "closed | 2nd: indexed in / open / closed | closed - after the small one |",
        "|---|---|---|---|---:|",
    ]
    for name, r in runs:
        rounds = r["rounds"]
        cells = [f"{x['took']:.0f} s / {x['open']:.0f} / {x['closed']:.0f} MiB" for x in rounds] + [
            "not reached"
        ] * (2 - len(rounds))
        warm = r.get("warm", float("nan"))
        after = rounds[-1]["closed"] - warm if rounds else float("nan")
        lines.append(
            f"| {name} | {r.get('before', float('nan')):.0f} → {warm:.0f} MiB | {cells[0]} | "
            f"{cells[1]} | +{after:.0f} MiB |" + (f" ({r['error']})" if r["error"] else "")
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
