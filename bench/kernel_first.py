"""The kernel's first map alone, through the real daemon, for several codes in one run (issue 22:
the first map with both cores in 60 s at the speed where 1aa245a's daemon took 126 s).

bench/kernel measures one daemon before this tree and much besides the first map (minutes a
daemon); a quiet slot holds three daemons' first maps only. Here each code's daemon, cold (a
fresh data dir: no cached tags), is asked what bench/kernel asks first: `workspace/fileTokens`
for every file, `session/create`, then `repoMap/get` (4,096 tokens, no focus); the first map's
seconds from the first request, its tokens, its text (its SHA-256 here, and the text kept in
bench/out/kernel_first/ for a diff: the same tree must give the same map), and the CPU seconds
of the daemon and its children by then (their user and system time from /proc: retired tag
workers through the daemon's cutime, live ones read before the daemon is stopped), which do not
depend on the machine's load as the seconds do; the daemon's RSS peak until then (its own every
RSS_S, with its tag workers' every fourth sample). The daemon is stopped once it answers.

KERNEL_FIRST_SIDES: `label=rev` items, comma-separated (`this`: this tree), in the order run;
KERNEL_FIRST_ROUNDS rounds, each in the order of the one before turned by one, so no code is
always first. Before each round, every .c and .h file of the tree is read once (the page
cache, which other runs may have emptied, is the same for each daemon). The load average is
read before and after each daemon.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.baseline import baseline_tree
from bench.daemon import _env, _Processes, _rss_mib
from bench.kernel import BUDGET, MODEL, _Session, connect, kernel_tree, warm_page_cache
from bench.scale_tree import family_rss_parts

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "kernel_first"
SIDES = os.environ.get("KERNEL_FIRST_SIDES", "this=this,main=bb60663,1aa245a=1aa245a")
ROUNDS = int(os.environ.get("KERNEL_FIRST_ROUNDS", "1"))
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User + system seconds of `pid` and of its children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime


def family_cpu_s(pid: int) -> float:
    """`_cpu_s` of `pid` and of its live children (the tag workers)."""
    total = _cpu_s(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for child in children:
        try:
            total += _cpu_s(int(child))
        except OSError:
            continue  # ended meanwhile (and waited for: in the daemon's cutime)
    return total


def first_map(server: Path, tree: Path) -> dict[str, Any]:
    """One cold daemon of `server`'s code: its first map and what it took."""
    base = Path(tempfile.mkdtemp(prefix="tkfirst-"))
    env = {**_env(base), "PYTHONPATH": str(server)}
    sock = base / "run" / "tokend" / "daemon.sock"
    procs = _Processes(base, env)
    f: dict[str, Any] = {"load_before": os.getloadavg()[0], "at": f"{datetime.now(UTC):%H:%M}"}
    stop = threading.Event()
    try:
        daemon = procs.daemon(sock)
        threading.Thread(target=_peak, args=(daemon.pid, stop, f), daemon=True).start()
        cpu_start = family_cpu_s(daemon.pid)
        conn, client = connect(sock, "bench-kernel-first")
        started = time.perf_counter()
        s = _Session(client, started)
        uri = tree.as_uri()
        f["index_s"], figures = s.request("workspace/fileTokens", {"workspaceUri": uri})
        f["files"] = len(figures)
        _, created = s.request("session/create", {"model": MODEL, "workspaceUri": uri})
        params = {"sessionId": created["sessionId"], "budgetTokens": BUDGET}
        _, first = s.request("repoMap/get", params)
        f["first_map_s"] = time.perf_counter() - started
        f["cpu_s"] = family_cpu_s(daemon.pid) - cpu_start
        f["tokens"], f["text"] = first["tokens"], first["text"]
        f["sha"] = hashlib.sha256(first["text"].encode()).hexdigest()[:12]
        f["load_after"] = os.getloadavg()[0]
        stop.set()
        conn.close()
    finally:
        stop.set()
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    return f


RSS_S = 0.05  # the daemon's own VmRSS read this often until the first map's answer


def _peak(pid: int, stop: threading.Event, f: dict[str, Any]) -> None:
    """The daemon's highest VmRSS (MiB), `f["peak"]`, and that of it and its children summed
    every fourth sample (the tag workers; shared pages counted in each), `f["peak_all"]`."""
    f["peak"] = f["peak_all"] = 0.0
    n = 0
    while not stop.wait(RSS_S):
        own, children = family_rss_parts(pid) if n % 4 == 0 else (_rss_mib(pid), [])
        f["peak"] = max(f["peak"], own)
        f["peak_all"] = max(f["peak_all"], own + sum(children))
        n += 1


def run() -> str:
    tree = kernel_tree()
    sides = [item.split("=", 1) for item in SIDES.split(",") if item]
    got: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in sides}
    warm: list[float] = []
    OUT.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        servers: dict[str, Path] = {}
        for label, rev in sides:
            if rev == "this":
                servers[label] = ROOT / "server"
                continue
            checkout = stack.enter_context(baseline_tree(rev))
            if checkout is None:
                raise RuntimeError(f"{rev}: not in this clone")
            servers[label] = checkout / "server"
        order = [label for label, _ in sides]
        for n in range(ROUNDS):
            warm.append(warm_page_cache(tree))
            for label in order[n % len(order) :] + order[: n % len(order)]:
                r = first_map(servers[label], tree)
                (OUT / f"{label}-{n + 1}.txt").write_text(r.pop("text"))
                got[label].append(r)
    return _section(sides, got, warm)


def _section(
    sides: list[list[str]], got: dict[str, list[dict[str, Any]]], warm: list[float]
) -> str:
    labels = [label for label, _ in sides]
    med = {k: statistics.median(r["first_map_s"] for r in got[k]) for k in labels}
    cpu = {k: statistics.median(r["cpu_s"] for r in got[k]) for k in labels}
    rows = [
        "### kernel_first: the kernel's first map alone, several codes in one run "
        "(bench/kernel_first.py)\n",
        f"Each daemon cold, one after the other, {ROUNDS} round(s); the page cache read before "
        f"each round ({', '.join(f'{w:.1f}' for w in warm)} s). Seconds from the first request "
        "to the first map's answer; CPU s of the daemon and its tag workers by then.\n",
        "| code | runs: first map s (UTC, load before-after) | median s | "
        + " | ".join(f"/ {k}" for k in labels[1:])
        + " | CPU s (median) | RSS peak MiB: the daemon (with its workers) | map tokens, text "
        "SHA-256 |",
        "|---|---|---:|" + "---:|" * (len(labels) - 1) + "---:|---|---|",
    ]
    for label, rev in sides:
        runs = "; ".join(
            f"{r['first_map_s']:.1f} ({r['at']}, {r['load_before']:.1f}-{r['load_after']:.1f})"
            for r in got[label]
        )
        ratios = " | ".join(f"{med[label] / med[k]:.3f}" for k in labels[1:])
        shas = ", ".join(sorted({f"{r['tokens']} {r['sha']}" for r in got[label]}))
        peaks = ", ".join(f"{r['peak']:.0f} ({r['peak_all']:.0f})" for r in got[label])
        rows.append(
            f"| {label} ({rev}) | {runs} | {med[label]:.1f} | {ratios} | {cpu[label]:.1f} | "
            f"{peaks} | {shas} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(run())
