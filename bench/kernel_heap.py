"""What the daemon holds at its peak in the kernel's words' pass (issue 22), through the real
daemon: the allocator's view and, on request, Python's.

The daemon runs with a `sitecustomize` (this bench's, first on its PYTHONPATH) that starts a
thread in the daemon alone (its command line says `serve`) reading, every TKHEAP_SAMPLE_S
(0.1 s): VmRSS and /proc/self/smaps_rollup (anonymous against file-backed pages), glibc's
mallinfo2 (the heap's bytes from the system, those in use and free, the mmapped blocks') and,
with TKHEAP_TRACE (`start` or `pass`), tracemalloc's traced bytes. The client writes the phase
it is in (the walk, the tags and the first map, the words, after) to a file the thread reads.
At the words' pass's start and at each new high of its RSS (by TKHEAP_STEP_MIB, 2 MiB) the
thread writes /proc/self/smaps summed by kind of mapping, glibc's malloc_info and, with
tracemalloc, a snapshot. A bench-only probe: the product is not changed, and its seconds are
not to be read (the sampler and tracemalloc cost).

`python -m bench.kernel_heap [REV ...]` runs this tree's daemon, then each REV's, cold, one after
the other, to the end of the words' pass, and prints each phase's high and its parts.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.baseline import baseline_tree
from bench.daemon import _env, _Processes
from bench.kernel import BUDGET, MODEL, _Session, connect, kernel_tree
from bench.scale_tree import family_rss_parts

ROOT = Path(__file__).resolve().parents[1]
_SITE = r"""
import ctypes, json, os, sys, threading, time

SAMPLE_S = float(os.environ.get("TKHEAP_SAMPLE_S", "0.1"))
STEP_MIB = float(os.environ.get("TKHEAP_STEP_MIB", "2"))

def _is_daemon():
    try:
        argv = open("/proc/self/cmdline", "rb").read().split(b"\0")
    except OSError:
        return False
    return b"serve" in argv and b"tokend" in argv

class _MI(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

def _rollup():
    out = {}
    for line in open("/proc/self/smaps_rollup"):
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            out[parts[0].rstrip(":")] = int(parts[1])
    return out

def _smaps():
    kinds, name = {}, None
    for line in open("/proc/self/smaps"):
        parts = line.split()
        if "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
            path = parts[5] if len(parts) > 5 else ""
            if path.startswith("["):
                name = path
            elif not path:
                name = "anon"
            elif ".so" in path:
                name = "lib:" + os.path.basename(path).split(".so")[0]
            else:
                name = "file:" + os.path.basename(path)
        elif parts[0] in ("Rss:", "Anonymous:") and name is not None:
            k = kinds.setdefault(name, [0, 0])
            k[0 if parts[0] == "Rss:" else 1] += int(parts[1])
    return {k: v for k, v in kinds.items() if v[0] >= 1024}

def _run(out, phase_file, trace):
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MI
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    import tracemalloc
    f = open(out, "a", buffering=1)
    high, started, snaps, last_phase = 0.0, time.time(), 0, ""
    while True:
        time.sleep(SAMPLE_S)
        try:
            phase = open(phase_file).read().strip()
        except OSError:
            phase = ""
        if trace == "pass" and phase == "words" and not tracemalloc.is_tracing():
            tracemalloc.start(4)
        r = _rollup()
        mi = libc.mallinfo2()
        row = {"t": time.time() - started, "phase": phase, "rss": r.get("Rss", 0),
               "anon": r.get("Anonymous", 0), "arena": mi.arena >> 10, "inuse": mi.uordblks >> 10,
               "free": mi.fordblks >> 10, "mmapped": mi.hblkhd >> 10, "hblks": mi.hblks,
               "top": mi.keepcost >> 10, "threads": threading.active_count()}
        if tracemalloc.is_tracing():
            row["traced"] = tracemalloc.get_traced_memory()[0] >> 10
        first = phase == "words" and last_phase != "words"
        last_phase = phase
        if phase != "words":
            high = 0.0
        if first or (phase == "words" and row["rss"] > high + STEP_MIB * 1024):
            high = max(high, row["rss"])
            row["smaps"] = _smaps()
            name = f"{out}.{snaps}"
            fp = libc.fopen((name + ".xml").encode(), b"w")
            if fp:
                libc.malloc_info(0, fp)
                libc.fclose(fp)
            if tracemalloc.is_tracing() and snaps < 8:
                tracemalloc.take_snapshot().dump(name + ".snap")
            row["snap"] = snaps
            snaps += 1
        f.write(json.dumps(row) + "\n")

if os.environ.get("TKHEAP_OUT") and _is_daemon():
    # the daemon's one arena (adapters.heap.one_arena) before this thread's first malloc: glibc
    # fixes the arena limit then, and a probe thread started under the default limit gave the
    # daemon a second arena it does not have unprobed (the runs of 2026-11-28 09:34-11:17 UTC)
    ctypes.CDLL(None).mallopt(-8, 1)
    trace = os.environ.get("TKHEAP_TRACE", "")
    if trace == "start":
        import tracemalloc
        tracemalloc.start(4)
    threading.Thread(target=_run, name="tkheap", daemon=True,
                     args=(os.environ["TKHEAP_OUT"], os.environ["TKHEAP_PHASE"], trace)).start()
"""


def one_side(server: Path, tree: Path, out: Path, trace: str = "") -> dict[str, Any]:
    """A cold daemon of `server`'s code on the tree until its words are in: its samples (the
    file `out`), and the daemon's and its workers' VmRSS every 0.2 s from outside."""
    base = Path(tempfile.mkdtemp(prefix="tkhp-"))
    site = base / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SITE)
    phase_file = base / "phase"
    phase_file.write_text("start")
    env = {**_env(base), "PYTHONPATH": f"{site}:{server}", "TKHEAP_OUT": str(out),
           "TKHEAP_PHASE": str(phase_file), "TKHEAP_TRACE": trace}  # fmt: skip
    sock = base / "run" / "tokend" / "daemon.sock"
    procs = _Processes(base, env)
    family: list[tuple[float, str, float, list[float]]] = []
    stop = threading.Event()
    marks: dict[str, float] = {}
    try:
        daemon = procs.daemon(sock)
        t0 = time.time()

        def sample() -> None:
            while not stop.wait(0.2):
                own, kids = family_rss_parts(daemon.pid)
                family.append((time.time() - t0, phase_file.read_text(), own, kids))

        threading.Thread(target=sample, daemon=True).start()
        conn, client = connect(sock, "bench-kernel-heap")
        s = _Session(client, time.perf_counter())
        uri = tree.as_uri()

        def mark(name: str) -> None:
            phase_file.write_text(name)
            marks[name] = time.time() - t0

        mark("the walk")
        s.request("workspace/fileTokens", {"workspaceUri": uri})
        _, created = s.request("session/create", {"model": MODEL, "workspaceUri": uri})
        mark("the tags and the first map")
        s.request("repoMap/get", {"sessionId": created["sessionId"], "budgetTokens": BUDGET})
        mark("words")
        s.wait_end()
        mark("after")
        time.sleep(3.0)
        marks["end"] = time.time() - t0
        conn.close()
    finally:
        stop.set()
        procs.stop_all()
        logs = sorted((base / "state").glob("**/*.log"))
        if logs:  # the daemon's log, kept beside the samples
            shutil.copy(logs[0], out.with_suffix(".log"))
        shutil.rmtree(base, ignore_errors=True)
    return {"family": family, "marks": marks}


def summary(name: str, out: Path, side: dict[str, Any]) -> str:
    """Each phase's highest RSS sample in the daemon and its parts (MiB)."""
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    lines = [f"{name}: marks " + ", ".join(f"{k} {v:.1f}" for k, v in side["marks"].items())]
    for phase in ("the walk", "the tags and the first map", "words", "after"):
        got = [r for r in rows if r["phase"] == phase]
        if not got:
            continue
        top, first = max(got, key=lambda r: r["rss"]), got[0]
        for label, r in (("first", first), ("high", top)):
            parts = ", ".join(
                f"{k} {r[k] / 1024:.1f}"
                for k in ("rss", "anon", "arena", "inuse", "free", "mmapped", "top", "traced")
                if k in r
            )
            lines.append(f"  {phase} {label} at {r['t']:.1f} s: {parts}")
        fam = [f for f in side["family"] if f[1] == phase]
        if fam:
            f = max(fam, key=lambda f: f[2] + sum(f[3]))
            kids = " + ".join(f"{k:.0f}" for k in f[3])
            lines.append(f"  {phase} with workers: {f[2] + sum(f[3]):.0f} ({f[2]:.0f} + {kids})")
    return "\n".join(lines)


def main(revs: list[str], trace: str = "", outdir: Path | None = None) -> str:
    tree = kernel_tree()
    outdir = outdir or Path(tempfile.mkdtemp(prefix="tkheap-out-"))
    outdir.mkdir(parents=True, exist_ok=True)
    text = [f"samples in {outdir}"]
    here = [] if os.environ.get("TKHEAP_SKIP_HERE") else ["here"]
    for rev in [*here, *revs]:
        out = outdir / f"{rev}.jsonl"
        if rev == "here":
            side = one_side(ROOT / "server", tree, out, trace)
        else:
            with baseline_tree(rev) as before:
                assert before is not None, rev
                side = one_side(before / "server", tree, out, trace)
        (outdir / f"{rev}.family.json").write_text(json.dumps(side))
        text.append(summary(rev, out, side))
        print(text[-1], flush=True)
    return "\n".join(text)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args, os.environ.get("TKHEAP_TRACE", ""),
         Path(os.environ["TKHEAP_DIR"]) if os.environ.get("TKHEAP_DIR") else None)  # fmt: skip
