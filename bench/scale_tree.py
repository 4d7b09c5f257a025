"""A 100,000-file workspace and everybody else: how long another connection waits while the
tree is walked, indexed and its first repo map built, and the memory left once it is closed,
on the real `tokend serve`, beside today's main (BEFORE_REV) in the same run (issue 22).

The tree: bench.workspace_memory's generated one (FILES small Python files, one definition and
a call each, in folders of 100). Per daemon (a fresh data and cache dir each: nothing cached):
a workload process (its own interpreter, so decoding the 100,000-figure reply does not hold
the probe's) connects, creates a session on the tree, asks `workspace/fileTokens` for every
file (the walk and the index) and then `repoMap/get` (every file tagged, the first map), then
closes its connection. Meanwhile the probe, a second connection on a session of its own, sends
`budget/snapshot` back to back: each round trip is one wait of the other connection. Reported
per phase (the walk and index; the tags and the first map): round trips, p50, p99 and the
longest. RSS is the daemon's plus its children's (the tag workers), summed from /proc VmRSS
(shared pages counted once per process: an upper bound), sampled every 0.1 s: the peak, with
the tree open, and SETTLE_S after the workload's connection closed; all after a WARM_FILES
tree was opened and closed the same way (what any first workspace loads, the vocabulary, the
grammars, stays for the daemon's life and is not the big tree's).

`python -m bench.run scale_tree` prints the section.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.baseline import ROOT, baseline_tree
from bench.daemon import _env, _Processes, _unix_client
from bench.workspace_memory import make_tree, slow_request

BEFORE_REV = os.environ.get("SCALE_TREE_BEFORE_REV", "7a52517")  # main before this stop's tree
# work (issue 22; 67ade8c, 41dd9a0 and 2c3728f before)
FILES = int(os.environ.get("BENCH_SCALE_TREE_FILES", "100000"))
SETTLE_S = 5.0
WARM_FILES = 2_000  # opened and closed first: the vocabulary, grammars and modules stay
GOAL_WAIT_MS = 50.0
LONGEST_SHOWN = 5  # the longest waits of each phase, with when they came
REPLY_LIMIT_S = 900.0


def _workload(sock: str, tree: str, marks: Any) -> None:
    """The big workspace's client (a process of its own): perf_counter marks of each phase."""
    client = _unix_client(Path(sock), "big-tree")
    uri = Path(tree).as_uri()
    session = client.request("session/create", {"model": "gpt-4o", "workspaceUri": uri})
    marks.put(("start", time.perf_counter()))
    figures = slow_request(client, "workspace/fileTokens", {"workspaceUri": uri}, REPLY_LIMIT_S)
    marks.put(("indexed", time.perf_counter()))
    marks.put(("files", len(figures)))
    del figures
    slow_request(
        client,
        "repoMap/get",
        {"sessionId": session["sessionId"], "budgetTokens": 1024},
        REPLY_LIMIT_S,
    )
    marks.put(("mapped", time.perf_counter()))
    client.close()
    marks.put(("closed", time.perf_counter()))


def _family_rss_mib(pid: int) -> float:
    """VmRSS of `pid` and its children (the tag workers), MiB."""
    own, children = family_rss_parts(pid)
    return own + sum(children)


def family_rss_parts(pid: int) -> tuple[float, list[float]]:
    """VmRSS of `pid` and of each of its children (the tag workers), MiB (0 for `pid` gone).
    A child is listed under the thread that started it while that thread lives (the daemon
    starts its workers from its build threads): every thread's list is read."""
    pids = [pid]
    try:
        tasks = [t.name for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        tasks = []
    for task in tasks:
        try:
            children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:  # (the thread ended meanwhile)
            continue
        pids += [int(c) for c in children]
    sizes = []
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    sizes.append(int(line.split()[1]) / 1024)
        except OSError:
            sizes.append(0.0)
    return (sizes[0] if sizes else 0.0), sizes[1:]


def _run_workload(sock: Path, tree: Path) -> tuple[Any, Any]:
    ctx = multiprocessing.get_context("spawn")
    marks = ctx.Queue()
    worker = ctx.Process(target=_workload, args=(str(sock), str(tree), marks))
    worker.start()
    return worker, marks


def measure(server_dir: Path, tree: Path, warm: Path) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkst-"))
    env = {**_env(base), "PYTHONPATH": str(server_dir), "XDG_CACHE_HOME": str(base / "cache")}
    if os.environ.get("BENCH_ASYNCIO_DEBUG"):  # the loop's slow callbacks, logged (diagnosis)
        env["PYTHONASYNCIODEBUG"] = "1"
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    r: dict[str, Any] = {"error": None}
    stop = threading.Event()
    peak = [0.0]
    try:
        daemon = procs.daemon(sock)
        probe = _unix_client(sock, "probe")
        watched = probe.request("session/create", {"model": "gpt-4o"})["sessionId"]
        for _ in range(50):  # warm
            probe.request("budget/snapshot", {"sessionId": watched})
        warming, _ = _run_workload(sock, warm)  # what any first workspace loads for good
        warming.join(REPLY_LIMIT_S)
        time.sleep(SETTLE_S)
        r["rss_start"] = _family_rss_mib(daemon.pid)

        def sample() -> None:
            while not stop.wait(0.1):
                peak[0] = max(peak[0], _family_rss_mib(daemon.pid))

        threading.Thread(target=sample, daemon=True).start()
        worker, marks = _run_workload(sock, tree)
        samples: list[tuple[float, float]] = []
        got: dict[str, float] = {}
        deadline = time.monotonic() + 2 * REPLY_LIMIT_S
        while "closed" not in got and time.monotonic() < deadline:
            started = time.perf_counter()
            probe.request("budget/snapshot", {"sessionId": watched})
            samples.append((started, (time.perf_counter() - started) * 1000))
            while not marks.empty():
                key, value = marks.get()
                got[key] = value
                if key == "indexed":
                    r["rss_indexed"] = _family_rss_mib(daemon.pid)
                if key == "mapped":
                    r["rss_open"] = _family_rss_mib(daemon.pid)
            if not worker.is_alive() and marks.empty() and "closed" not in got:
                raise RuntimeError(f"the workload ended early (exit {worker.exitcode})")
        worker.join(30)
        r["files"] = int(got["files"])
        r["index_s"] = got["indexed"] - got["start"]
        r["map_s"] = got["mapped"] - got["indexed"]
        r["walk"] = [ms for at, ms in samples if got["start"] <= at < got["indexed"]]
        r["map"] = [ms for at, ms in samples if got["indexed"] <= at < got["mapped"]]
        r["longest"] = {  # when the longest waits came: seconds into their phase
            phase: sorted(((ms, at - got[since]) for at, ms in samples
                           if got[since] <= at < got[until]), reverse=True)[:LONGEST_SHOWN]
            for phase, since, until in (("walk", "start", "indexed"), ("map", "indexed", "mapped"))
        }  # fmt: skip
        time.sleep(SETTLE_S)
        r["rss_closed"] = _family_rss_mib(daemon.pid)
        r["peak"] = peak[0]
        probe.close()
    except Exception as exc:  # said in the section
        r["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        stop.set()
        procs.stop_all()
        if os.environ.get("BENCH_KEEP_LOGS"):
            keep = shutil.ignore_patterns("cache", "data", "*.sock")
            shutil.copytree(base, os.environ["BENCH_KEEP_LOGS"], ignore=keep, dirs_exist_ok=True)
        shutil.rmtree(base, ignore_errors=True)
    return r


def _bare_walk_s(tree: Path) -> float:
    started = time.perf_counter()
    for folder, _dirs, names in os.walk(tree):
        for name in names:
            os.stat(os.path.join(folder, name))
    return time.perf_counter() - started


def run() -> str:
    tree_root = Path(tempfile.mkdtemp(prefix="tkstt-"))
    try:
        tree, warm = tree_root / "ws", tree_root / "warm"
        size = make_tree(tree, FILES)
        make_tree(warm, WARM_FILES)
        walk_s = _bare_walk_s(tree)
        runs = [("tokend", measure(ROOT / "server", tree, warm))]
        with baseline_tree(BEFORE_REV) as before:
            if before is not None and os.environ.get("BENCH_SCALE_TREE_BEFORE", "1") != "0":
                runs.append((f"before ({BEFORE_REV})", measure(before / "server", tree, warm)))
    finally:
        shutil.rmtree(tree_root, ignore_errors=True)
    return _section(runs, size, walk_s)


def _pct(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered)) - 1))]


def _waits(values: list[float]) -> str:
    if not values:
        return "none |  |  |  | "
    return (
        f"{len(values):,} | {statistics.median(values):.1f} | {_pct(values, 0.99):.1f} | "
        f"{max(values):.1f} | {sum(1 for v in values if v > GOAL_WAIT_MS):,}"
    )


def _section(runs: list[tuple[str, dict[str, Any]]], size: int, walk_s: float) -> str:
    lines = [
        "### scale_tree: a 100,000-file workspace and another connection (bench/scale_tree.py)\n",
        f"A generated tree of {FILES:,} small Python files ({size / 1e6:.1f} MB; a bare os.walk + "
        f"stat of it: {walk_s:.2f} s). One client asks `workspace/fileTokens` for every file "
        "(the walk and index), then `repoMap/get` (every file tagged: the first map), then "
        "closes; another connection sends `budget/snapshot` back to back meanwhile (each round "
        "trip is one wait). Nothing cached (fresh data and cache dirs). RSS: the daemon plus its "
        "children (tag workers), VmRSS summed, sampled every 0.1 s. Same run: today's daemon "
        f"and main before this work ({BEFORE_REV}). Waits in ms; goal: none over "
        f"{GOAL_WAIT_MS:.0f} ms.\n",
        "| daemon | phase | took, s | waits | p50 | p99 | longest | over the goal | goal |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in runs:
        if r["error"] and "map" not in r:
            lines.append(f"| {name} | (failed: {r['error']}) ||||||||")
            continue
        for phase, took in (("walk and index", "index_s"), ("tags and first map", "map_s")):
            key = "walk" if phase.startswith("walk") else "map"
            met = max(r[key], default=0.0) <= GOAL_WAIT_MS
            lines.append(
                f"| {name} | {phase} | {r[took]:.1f} | {_waits(r[key])} | "
                f"{'met' if met else '**missed**'} |"
            )
    for name, r in runs:
        for phase, waits in r.get("longest", {}).items():
            shown = ", ".join(f"{ms:.0f} ms at {at:.1f} s" for ms, at in waits)
            lines.append(f"\n{name}, {phase}: the longest waits, when they came: {shown}.")
    lines += [
        "",
        "| daemon | RSS MiB: after a 2,000-file tree | after the index | open (mapped) | peak | 5 s after close | "
        "closed - start |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in runs:
        if "rss_closed" not in r:
            continue
        lines.append(
            f"| {name} | {r['rss_start']:.0f} | {r.get('rss_indexed', float('nan')):.0f} | "
            f"{r.get('rss_open', float('nan')):.0f} | {r['peak']:.0f} | {r['rss_closed']:.0f} | "
            f"+{r['rss_closed'] - r['rss_start']:.0f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
