"""Big inputs and the daemon's memory, on the real `tokend serve` (bench/bigframes.py).

Each scenario runs on a fresh daemon of this checkout and of the daemon before big frames were
parsed as they arrive (BEFORE_REV), in the same run, on private temp dirs with SQLite stores:
  tool100  a 100 MB tool result (a `Bash` output: gated) in one session/append
  tool30   the same with 30 MB
  text10   a 10 MB user message, counted exactly (gpt-4o, a 10M-token window)
The daemon's RSS (/proc/PID/status VmRSS) is read before, sampled every 20 ms while the request
runs (peak), and read again 3 s after its reply (after). For the tool results, the request
`context/assemble` builds is searched for the tool result: how many of its characters reach it.
The 30 MB and 10 MB scenarios run BENCH_BIGFRAMES_ROUNDS (3) times on each daemon, in turn, and
the round of median time is shown.

`python -m bench.bigframes` prints the section.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.abuse import _tree_at
from bench.daemon import _Client, _env, _Processes, _rss_mib, _unix_client

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REV = "90659a4"  # main just before big frames were parsed as they arrive
MB = 1_000_000
SETTLE_S = 3.0
ROUNDS = int(os.environ.get("BENCH_BIGFRAMES_ROUNDS", "3"))  # 30 MB and 10 MB: the median round
LINES = [
    "src/module_{i:06d}.c:120:7: warning: unused variable 'tmp' [-Wunused-variable]\n",
    'key "{i}" = C:\\path\\to\\file {i}\t\n',
    "café déjà vu {i} — naïve façade\n",
    "日志第{i}行：错误已修复\n",
]
SCENARIOS = {
    "tool100": "100 MB tool result (gated)",
    "tool30": "30 MB tool result (gated)",
    "text10": "10 MB user message, counted exactly",
}


def _text(chars: int) -> str:
    parts, size, i = [], 0, 0
    while size < chars:
        line = LINES[i % len(LINES)].format(i=i)
        parts.append(line)
        size += len(line)
        i += 1
    return "".join(parts)[:chars]


class _Peak:
    """The highest VmRSS of `pid` seen while running (sampled every 20 ms)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, _rss_mib(pid), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mib(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def _call(client: _Client, method: str, params: Any) -> dict[str, Any]:
    request_id = client.start_request(method, params)
    while (message := client.read()).get("id") != request_id:
        pass
    return message


def _scenario(tree: Path, kind: str) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="tkbf-"))  # short: unix socket paths max ~104 bytes
    env = {**_env(base), "PYTHONPATH": str(tree)}
    procs = _Processes(base, env)
    sock = base / "run" / "tokend" / "daemon.sock"
    try:
        daemon, _ = procs.serve("--listen", f"unix:{sock}", "--idle-timeout", "0")
        client = _unix_client(sock, "bench")
        window = {"model": "gpt-4o", "contextWindow": 10_000_000}
        sid = client.request("session/create", window)["sessionId"]
        if kind == "text10":
            # The first exact count loads the o200k vocabulary (some 70 MiB, once per daemon):
            # a small message first, so that "after" is what the big message leaves behind.
            warm = {"role": "user", "parts": [{"type": "text", "text": "warm the tokenizer"}]}
            client.request("session/append", {"sessionId": sid, "message": warm})
            params = {"role": "user", "parts": [{"type": "text", "text": _text(10 * MB)}]}
        else:
            call = {"type": "toolCall", "callId": "c1", "name": "Bash", "input": {"command": "x"}}
            message = {"role": "assistant", "parts": [call]}
            client.request("session/append", {"sessionId": sid, "message": message})
            output = _text((100 if kind == "tool100" else 30) * MB)
            result = {"type": "toolResult", "callId": "c1", "name": "Bash", "output": output}
            params = {"role": "tool", "parts": [result]}
        client.request("budget/snapshot", {"sessionId": sid})
        time.sleep(1.0)
        before = _rss_mib(daemon.pid)
        peak = _Peak(daemon.pid)
        started = time.perf_counter()
        reply = _call(client, "session/append", {"sessionId": sid, "message": params})
        seconds = time.perf_counter() - started
        del params
        time.sleep(SETTLE_S)
        top, after = peak.stop(), _rss_mib(daemon.pid)
        shown = None
        if kind != "text10" and "result" in reply:
            assembled = client.request(
                "context/assemble", {"sessionId": sid, "format": "anthropic"}
            )
            shown = sum(
                len(block["content"])
                for m in assembled["messages"]
                for block in m["content"]
                if block["type"] == "tool_result"
            )
        client.close()
        error = reply.get("error")
        return {
            "before": before,
            "peak": top,
            "after": after,
            "seconds": seconds,
            "answer": f"error {error['code']}" if error else "stored",
            "shown": shown,
        }
    finally:
        procs.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def _median_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round of median time, its memory figures with it (one daemon's run, not a mix)."""
    return sorted(rounds, key=lambda r: r["seconds"])[len(rounds) // 2]


def run() -> str:
    before_tree = _tree_at(BEFORE_REV)
    trees = [("tokend", ROOT / "server")]
    if before_tree is not None:
        trees.append((f"before ({BEFORE_REV})", before_tree / "server"))
    results: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        for kind in SCENARIOS:
            rounds: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
            for _ in range(1 if kind == "tool100" else ROUNDS):
                for name, tree in trees:  # interleaved: the machine's noise hits both alike
                    rounds[name].append(_scenario(tree, kind))
            for name, _ in trees:
                results[(kind, name)] = _median_round(rounds[name])
    finally:
        if before_tree is not None:
            shutil.rmtree(before_tree, ignore_errors=True)
    lines = [
        "### Big inputs: the daemon's memory (bench/bigframes.py)\n",
        "One request on a fresh `tokend serve` (SQLite store), RSS in MiB read from /proc before it, "
        "sampled every 20 ms while it runs (peak) and 3 s after its reply; beside the daemon "
        f"before big frames were parsed as they arrive ({BEFORE_REV}), in the same run. s: from "
        "the request's first byte to its reply (the client encodes and sends it meanwhile); the 30 MB "
        f"and 10 MB rows are the median of {ROUNDS} rounds, each daemon's in turn.\n",
        "| scenario | daemon | answer | s | RSS before | peak | after | "
        "characters of it in the assembled request |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for kind, label in SCENARIOS.items():
        for name, _ in trees:
            r = results[(kind, name)]
            shown = "" if r["shown"] is None else f"{r['shown']:,}"
            lines.append(
                f"| {label} | {name} | {r['answer']} | {r['seconds']:.2f} | {r['before']:.0f} | "
                f"{r['peak']:.0f} ({r['peak'] - r['before']:+.0f}) | "
                f"{r['after']:.0f} ({r['after'] - r['before']:+.0f}) | {shown} |"
            )
    ours = results[("tool100", "tokend")]
    grown = ours["peak"] - ours["before"]
    shown_ok = ours["shown"] is not None and ours["shown"] <= 50_000
    lines += [
        "",
        f"Goal (issue 8): a 100 MB tool result grows the daemon's RSS by < 50 MB "
        f"({'met' if grown < 50 else '**missed**'}: peak {grown:+.0f} MiB) and the assembled "
        f"request carries <= 50,000 characters of it ({'met' if shown_ok else '**missed**'}: "
        f"{ours['shown'] if ours['shown'] is not None else 'none'}).",
    ]
    held = sys.getsizeof(_text(10 * MB)) / (1 << 20)
    lines.append(
        f"The 10 MB message (mixed scripts: {held:.0f} MiB as a Python string) stays in the loaded "
        "session, which holds its messages; the daemon's vocabulary is loaded before the "
        "measurement (a small message first)."
    )
    for kind in ("tool30", "text10"):
        if (kind, trees[-1][0]) in results and len(trees) > 1:
            a, b = results[(kind, "tokend")], results[(kind, trees[-1][0])]
            ratio = a["seconds"] / b["seconds"]
            lines.append(
                f"{SCENARIOS[kind]}: {a['seconds']:.2f} s vs {b['seconds']:.2f} s before "
                f"({ratio:.2f}x; goal <= 1.3x: {'met' if ratio <= 1.3 else '**missed**'}); "
                f"peak growth {a['peak'] - a['before']:+.0f} MiB vs "
                f"{b['peak'] - b['before']:+.0f} MiB before; after {a['after'] - a['before']:+.0f} vs "
                f"{b['after'] - b['before']:+.0f} MiB."
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    print(run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
