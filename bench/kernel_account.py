"""Where the kernel's first map's wall time goes, through the real daemon (issue 22): the CPU of
every thread of the daemon and of every tag worker process, and the time each worker spent
waiting, from the first `workspace/fileTokens` request to the first `repoMap/get` answer, and
then until the progress ends (what files say is counted after the first map).

The daemon runs with a `sitecustomize` (this bench's, put first on its PYTHONPATH) that names
each native thread after its Python thread (prctl PR_SET_NAME), so /proc tells them apart. Every
SAMPLE_S the sampler reads /proc: each thread's utime + stime, each child's, and each child's
schedstat (time on a CPU, time runnable waiting for one); a worker's wall time alive less both
is the time it slept (waiting for its next batch, or for the daemon to read its answers). The
CPU of workers that ended (retired) is read from the daemon's cutime + cstime. A thread that
ended between two samples loses at most SAMPLE_S of its CPU. `python -m bench.kernel_account`
prints the section: this tree's daemon, then bench.kernel's BEFORE_REV's (KERNEL_BEFORE=0: not).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.baseline import baseline_tree
from bench.daemon import _env, _Processes
from bench.kernel import BEFORE_REV, BUDGET, MODEL, _Session, connect, kernel_tree

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_S = 0.25
CORES = os.cpu_count() or 1
_TICK = os.sysconf("SC_CLK_TCK")
_NAMING = """
import ctypes, threading
_libc = ctypes.CDLL(None)
_inner = threading.Thread._bootstrap_inner
def _named(self):
    try:
        _libc.prctl(15, self.name.encode()[:15] + b"\\0", 0, 0, 0)
    except Exception:
        pass
    _inner(self)
threading.Thread._bootstrap_inner = _named
"""


def _stat(path: str) -> tuple[str, float, float]:
    """(comm, utime + stime, cutime + cstime), seconds, of a /proc/.../stat."""
    text = Path(path).read_text()
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    own = (int(fields[11]) + int(fields[12])) / _TICK
    children = (int(fields[13]) + int(fields[14])) / _TICK
    return comm, own, children


def _schedstat(pid: int) -> tuple[float, float]:
    on_cpu, waiting, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


class Sampler:
    """The daemon's threads' and its children's CPU, sampled every SAMPLE_S until `stopping`:
    `series` holds (time, CPU s by thread name, the workers' CPU s, their time runnable but
    waiting for a core), each figure counted from the daemon's start."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.threads: dict[int, tuple[str, float]] = {}  # tid -> (name, CPU s so far)
        self.children: dict[int, tuple[float, float]] = {}  # pid -> (CPU s, runnable s)
        self.series: list[tuple[float, dict[str, float], float, float]] = []
        self.live: list[int] = []  # the number of live children at each sample
        self.stopping = threading.Event()

    def sample(self) -> None:
        tids = os.listdir(f"/proc/{self.pid}/task")
        kids: list[str] = []
        for tid in tids:
            try:
                comm, cpu, _ = _stat(f"/proc/{self.pid}/task/{tid}/stat")
                # a child is listed under the thread that started it
                kids += Path(f"/proc/{self.pid}/task/{tid}/children").read_text().split()
            except (OSError, ValueError):
                continue
            self.threads[int(tid)] = (comm, cpu)
        _, _, reaped = _stat(f"/proc/{self.pid}/stat")  # the workers that ended (retired)
        live: dict[int, tuple[float, float]] = {}
        for kid in map(int, kids):
            try:
                _, cpu, _ = _stat(f"/proc/{kid}/stat")
                live[kid] = (cpu, _schedstat(kid)[1])
            except (OSError, ValueError):
                continue
        self.children.update(live)
        by_name: dict[str, float] = defaultdict(float)
        for name, cpu in self.threads.values():
            by_name[_family(name)] += cpu
        workers = reaped + sum(cpu for cpu, _ in live.values())
        runnable = sum(wait for _, wait in self.children.values())
        self.series.append((time.monotonic(), dict(by_name), workers, runnable))
        self.live.append(len(live))

    def run(self) -> None:
        while not self.stopping.wait(SAMPLE_S):
            try:
                self.sample()
            except OSError:
                return

    def at(self, moment: float) -> tuple[float, dict[str, float], float, float]:
        """The last sample taken at or before `moment` (the first one if none was)."""
        found = self.series[0]
        for row in self.series:
            if row[0] > moment:
                break
            found = row
        return found


def account(server: Path, tree: Path) -> dict[str, Any]:
    """One cold daemon of `server`'s code on the tree: its threads' and workers' CPU, and when
    each phase ended (seen by the client)."""
    base = Path(tempfile.mkdtemp(prefix="tkka-"))
    naming = base / "naming"
    naming.mkdir()
    (naming / "sitecustomize.py").write_text(_NAMING)
    env = {**_env(base), "PYTHONPATH": f"{naming}{os.pathsep}{server}"}
    sock = base / "run" / "tokend" / "daemon.sock"
    procs = _Processes(base, env)
    marks: dict[str, float] = {}
    loaded = os.getloadavg()[0]
    try:
        daemon = procs.daemon(sock)
        sampler = Sampler(daemon.pid)
        conn, client = connect(sock, "bench-account")
        sampler.sample()
        threading.Thread(target=sampler.run, daemon=True).start()
        marks["start"] = time.monotonic()
        s = _Session(client, time.perf_counter())
        uri = tree.as_uri()
        s.request("workspace/fileTokens", {"workspaceUri": uri})
        marks["walked"] = time.monotonic()
        _, created = s.request("session/create", {"model": MODEL, "workspaceUri": uri})
        s.request("repoMap/get", {"sessionId": created["sessionId"], "budgetTokens": BUDGET})
        marks["mapped"] = time.monotonic()
        ended = s.wait_end()  # what files say: counted after the first map (before: with it)
        if marks["start"] + ended > marks["mapped"]:
            marks["said"] = marks["start"] + ended
        sampler.stopping.set()
        sampler.sample()
        conn.close()
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    # the tags end with the last chunk's progress report (its time counts from the start)
    read = [t for t, kind, text in s.progress if kind == "report" and "symbols of" in text]
    if read:
        marks["tagged"] = marks["start"] + max(read)
    return {"sampler": sampler, "marks": marks, "load": (loaded, os.getloadavg()[0])}


PHASES = (
    ("start", "walked", "the walk (until `workspace/fileTokens` answered)"),
    ("walked", "tagged", "the tags (until the last chunk's progress report)"),
    ("tagged", "mapped", "after the tags, until the first map's answer"),
    ("mapped", "said", "after the first map, until what files say is in (the progress end)"),
)


def _tables(got: dict[str, Any]) -> str:
    sampler: Sampler = got["sampler"]
    marks = got["marks"]
    ended, began = sampler.series[-1][1], sampler.series[0][1]
    names = sorted(n for n, cpu in ended.items() if cpu - began.get(n, 0.0) >= 0.05)
    rows = [
        "\n\nCPU seconds from the first request to the first map's answer, by phase: the tag "
        f"workers and each thread of the daemon (named by this bench; load average "
        f"{got['load'][0]:.1f} before, {got['load'][1]:.1f} after); `nobody`: {CORES} cores' "
        "time no process of tokend used (idle, or taken by other processes of the machine); a "
        "worker asleep waits for its next batch, or for the daemon to read its answers.\n",
        "| phase | wall s | tag workers | " + " | ".join(f"`{n}`" for n in names)
        + " | nobody | workers runnable, waiting for a core | workers asleep |",
        "|---|---:|---:|" + "---:|" * len(names) + "---:|---:|---:|",
    ]  # fmt: skip
    for first, last, label in PHASES:
        if first not in marks or last not in marks:
            continue
        t0, by0, w0, r0 = sampler.at(marks[first])
        t1, by1, w1, r1 = sampler.at(marks[last])
        wall = marks[last] - marks[first]
        used = [by1.get(n, 0.0) - by0.get(n, 0.0) for n in names]
        nobody = CORES * wall - (w1 - w0) - sum(used)
        # the workers alive all the phase (the tags): what they neither ran nor waited to run
        during = [
            n for (t, *_), n in zip(sampler.series, sampler.live, strict=True) if t0 < t <= t1
        ]
        alive = max(during, default=0) * wall
        # (the tags' workers, and the words' after the first map: started by then)
        asleep = alive - (w1 - w0) - (r1 - r0) if first in ("walked", "mapped") else float("nan")
        rows.append(
            f"| {label} | {wall:.1f} | {w1 - w0:.1f} | "
            + " | ".join(f"{u:.1f}" for u in used)
            + f" | {nobody:.1f} | {r1 - r0:.1f} | {asleep:.1f} |"
        )
    rows.append(_request_row(sampler, marks))
    return "\n".join(rows)


REQUEST_THREAD = "tokend-work"  # the service's worker threads: the map request runs on one


def _request_row(sampler: Sampler, marks: dict[str, float]) -> str:
    """The first map request's own work: from the first sample after the tags in which a
    `tokend-work` thread used CPU, to the answer; beside its CPU and the build thread's
    (warming the graph, then the checkpointer's first walk) meanwhile."""
    if "tagged" not in marks:
        return ""
    _, by0, _, _ = sampler.at(marks["tagged"])
    began = next(
        (t for t, by, _, _ in sampler.series
         if t > marks["tagged"] and by.get(REQUEST_THREAD, 0.0) > by0.get(REQUEST_THREAD, 0.0)),
        None,
    )  # fmt: skip
    if began is None:
        return ""
    _, by1, _, _ = sampler.at(began - SAMPLE_S)
    _, by2, _, _ = sampler.at(marks["mapped"])
    cpu = by2.get(REQUEST_THREAD, 0.0) - by1.get(REQUEST_THREAD, 0.0)
    build = by2.get("tokend-index", 0.0) - by1.get("tokend-index", 0.0)
    return (
        f"\nThe map request, from its first CPU (sampled: up to {SAMPLE_S} s early) to its "
        f"answer: {marks['mapped'] - began + SAMPLE_S:.1f} s wall, {cpu:.1f} CPU s of its "
        f"thread; the build thread (the graph warmed, then the checkpointer's first walk) used "
        f"{build:.1f} CPU s meanwhile."
    )


def _family(name: str) -> str:
    """A thread's name without its pool index (tokend-tags_0 -> tokend-tags)."""
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name


def run() -> str:
    """This tree's daemon, then (unless KERNEL_BEFORE=0) the one of bench.kernel's BEFORE_REV
    (KERNEL_BEFORE_REV), one after the other on the same tree."""
    tree = kernel_tree()
    out = "\n\nThis tree:" + _tables(account(ROOT / "server", tree))
    if os.environ.get("KERNEL_BEFORE", "1") != "0":
        with baseline_tree(BEFORE_REV) as before_tree:
            if before_tree is not None:
                got = account(before_tree / "server", tree)
                out += f"\n\nBefore ({BEFORE_REV}):" + _tables(got)
    return out


if __name__ == "__main__":
    print(run())
