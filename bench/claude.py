"""The Claude tier (issue 20): counts, estimates, replay, repo map and speed in Claude tokens.

1. Accuracy per family against ctok (the oracle: ctok's count of each whole file as one user
   message, less the family's frame) on bench/estimator.py's corpus: tokend's exact count (the
   pieces it cuts long texts into), the cold estimate with the family's priors, the o200k-shaped
   estimate main 2c3728f gives a Claude model without an exact count (o200k-shaped, scaled per
   class by the family's ratios), and chars/4.
2. The replay of the shared Claude Code sessions' long session (claude-opus-4-6, v3) through
   `tokend replay` (the live service on a temporary store), in one process per run: this tree,
   main before the Claude tier (BEFORE_CLAUDE_REV) and main with ctok's own count (MAIN_REV),
   checked out beside, and this tree counting the same text with
   o200k_base (a gpt-4o session's counting cost) or with the estimate.
3. A Claude session's repo map of this repository at budgets 1,024-8,192 through the real
   `tokend lsp --standalone`, this tree and main before the tier: overshoot and fill.
4. Throughput: exact counting MB/s cold and from the cache, beside tiktoken o200k on the same
   text; a 1 MB tool result counted once.
5. Nobody waits: `budget/snapshot` round trips on one connection of the real `tokend serve` while
   another appends a 1 MB tool result (real source files) to a claude-opus-4-6 session, beside
   the same append to a gpt-4o session.
"""

from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ctok

from bench.baseline import ROOT, baseline_tree
from bench.daemon import _env, _Processes, _unix_client
from bench.estimator import Sample, gather_corpus
from bench.replay import SESSIONS, SESSIONS_DIR
from bench.stall import _answered, _frame, _percentile
from tokend.adapters.claude_tokens import ClaudeCounter
from tokend.adapters.claude_tokens import _model as claude_model
from tokend.adapters.tokenizers import CachedCounter, load_encoding
from tokend.core.counting.estimate import estimate_tokens
from tokend.core.counting.estimate_families import family_chars_per_token, family_estimate_tokens

BEFORE_CLAUDE_REV = "9f76291"  # main before the Claude tier
MAIN_REV = "2c3728f"  # main with the Claude tier counted by ctok itself (before tokend's own path)
FAMILIES = {"claude-v3": ("3.0", 7), "claude-v4.7": ("4.7", 11), "claude-v4.8": ("4.8", 6)}
FILES_PER_SOURCE = 40
BUDGETS = (1024, 2048, 4096, 8192)
REPEATS = 3


def _oracle(text: str, family: str) -> int:
    version, frame = FAMILIES[family]
    return int(ctok.token_count(text, version)) - frame


def _mape(pairs: list[tuple[float, int]]) -> float:
    return 100 * statistics.mean(abs(e - x) / x for e, x in pairs)


def _accuracy(samples: list[Sample]) -> list[str]:
    rows = [
        "| family | source | files | exact share (tokend = ctok) | tokend err % | cold estimate "
        "err % | main's cold estimate err % | chars/4 err % |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for family in FAMILIES:
        counter = ClaudeCounter(family)
        priors = family_chars_per_token(family)
        by_source: dict[str, list[tuple[int, int, int, int, float]]] = {}
        for s in samples:
            truth = _oracle(s.text, family)
            if truth < 20:
                continue
            row = (
                truth,
                counter.count(s.text),
                family_estimate_tokens(s.text, family),
                estimate_tokens(s.text, None, priors),  # main's: o200k-shaped, scaled
                len(s.text) / 4,
            )
            by_source.setdefault(s.source, []).append(row)
        for source, got in by_source.items():
            exact = sum(1 for t, ours, *_ in got if ours == t)
            rows.append(
                f"| {family} | {source} | {len(got)} | {100 * exact / len(got):.0f}% "
                f"| {_mape([(o, t) for t, o, *_ in got]):.2f} "
                f"| {_mape([(c, t) for t, _, c, _, _ in got]):.1f} "
                f"| {_mape([(d, t) for t, _, _, d, _ in got]):.1f} "
                f"| {_mape([(q, t) for t, *_, q in got]):.1f} |"
            )
    return rows


def _replay(server: Path, session: Path, config: str | None) -> tuple[dict[str, Any], float]:
    """(`tokend replay --json`'s summary, wall seconds) in a process of the tree `server`."""
    with tempfile.TemporaryDirectory(prefix="tokend-claude-bench-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
        env.update(HOME=home, XDG_CONFIG_HOME=f"{home}/config", PYTHONPATH=str(server))
        if config is not None:
            Path(home, "config", "tokend").mkdir(parents=True)
            Path(home, "config", "tokend", "config.toml").write_text(config)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tokend", "replay", str(session), "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - started
    return json.loads(done.stdout)["summary"], wall


def _replays(before: Path | None, main: Path | None) -> list[str]:
    session = SESSIONS_DIR / SESSIONS[0]
    if not session.is_file():
        return [f"Replay skipped: {SESSIONS_DIR.name} not found beside the repository."]
    here = ROOT / "server"
    variants: dict[str, tuple[Path, str | None]] = {
        "this tree: claude-v3 exact": (here, None),
        "this tree, counted with o200k_base": (
            here,
            '[models."claude-opus-4-6"]\ntokenizer = "o200k_base"\n',
        ),
        "this tree, counted with the estimate": (
            here,
            '[models."claude-opus-4-6"]\ntokenizer = ""\n',
        ),
    }
    if main is not None:
        variants[f"main {MAIN_REV}: claude-v3 exact (ctok)"] = (main / "server", None)
    if before is not None:
        variants[f"main {BEFORE_CLAUDE_REV} (before the Claude tier): estimate"] = (
            before / "server",
            None,
        )
    rows = [
        "| counting | calls | median abs err % | p90 abs err % | max abs err % | replay s (median) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, (server, config) in variants.items():
        runs = [_replay(server, session, config) for _ in range(REPEATS)]
        summary = runs[0][0]
        rows.append(
            f"| {label} | {summary['calls']} | {summary['medianAbsErrorPct']:.3f} "
            f"| {summary['p90AbsErrorPct']:.3f} | {summary['maxAbsErrorPct']:.3f} "
            f"| {statistics.median(w for _, w in runs):.2f} |"
        )
    return rows


def _maps(server: Path, base: Path) -> dict[int, tuple[int, int]]:
    """Budget -> (tokens the map reported, its text's Claude v3 count), from a Claude session
    on this repository in `tokend lsp --standalone` of the tree `server`."""
    env = _env(base)
    env["PYTHONPATH"] = str(server)
    processes = _Processes(base, env)
    try:
        client = processes.stdio_client("lsp", "--standalone")
        created = client.request(
            "session/create", {"model": "claude-opus-4-6", "workspaceUri": ROOT.as_uri()}
        )
        out = {}
        for budget in BUDGETS:
            got = client.request(
                "repoMap/get", {"sessionId": created["sessionId"], "budgetTokens": budget}
            )
            out[budget] = (got["tokens"], _oracle(got["text"], "claude-v3"))
        client.close()
        return out
    finally:
        processes.stop_all()


def _repo_maps(before: Path | None) -> list[str]:
    trees = {"this tree": ROOT / "server"}
    if before is not None:
        trees[f"main {BEFORE_CLAUDE_REV} (before the Claude tier)"] = before / "server"
    rows = [
        "| tree | budget | reported tokens | Claude v3 tokens (ctok) | overshoot | fill |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, server in trees.items():
        with tempfile.TemporaryDirectory(prefix="tokend-claude-map-") as base:
            for budget, (reported, claude) in _maps(server, Path(base)).items():
                rows.append(
                    f"| {label} | {budget:,} | {reported:,} | {claude:,} "
                    f"| {max(0, claude - budget):,} | {100 * claude / budget:.0f}% |"
                )
    return rows


def _mb_per_s(texts: list[str], count: Callable[[str], int]) -> tuple[float, float]:
    """(MB/s by the wall clock, MB/s by this thread's CPU time: the bench's own client threads
    of earlier parts may still run in this process)."""
    size = sum(len(t.encode()) for t in texts)
    started, cpu = time.perf_counter(), time.thread_time()
    for t in texts:
        count(t)
    wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
    return size / wall / 1e6, size / max(cpu, 1e-9) / 1e6


def _rate(texts: list[str], count: Callable[[str], int], digits: int) -> str:
    wall, cpu = _mb_per_s(texts, count)
    return f"{wall:.{digits}f} (CPU {cpu:.{digits}f})"


def _throughput(samples: list[Sample]) -> list[str]:
    texts = [s.text for s in samples]
    o200k = load_encoding("o200k_base")
    rows = [
        "| counter | cold MB/s: wall (CPU) | again (cache) MB/s: wall (CPU) |",
        "|---|---:|---:|",
    ]
    for family in ("claude-v3", "claude-v4.7"):
        claude_model(family).forget()  # cold: nothing remembered from the accuracy table
        cached = CachedCounter(ClaudeCounter(family))
        rows.append(
            f"| {family} (tokend over ctok) | {_rate(texts, cached.count, 2)} "
            f"| {_rate(texts, cached.count, 1)} |"
        )
        ctok_cached = CachedCounter(_Ctok(family))
        rows.append(
            f"| {family} (ctok itself: main {MAIN_REV}'s path) | {_rate(texts, ctok_cached.count, 2)} "
            f"| {_rate(texts, ctok_cached.count, 1)} |"
        )
    tiktoken_cached = CachedCounter(_O200k(o200k))
    rows.append(
        f"| o200k_base (tiktoken) | {_rate(texts, tiktoken_cached.count, 2)} "
        f"| {_rate(texts, tiktoken_cached.count, 1)} |"
    )
    return rows


_ONE_MB = """
import json, sys, time
from tokend.adapters.claude_tokens import ClaudeCounter
text = open(sys.argv[1], encoding="utf-8").read()
counter = ClaudeCounter(sys.argv[2])
counter.count("warm up: load the vocabulary")
wall, cpu = time.perf_counter(), time.process_time()
tokens = counter.count(text)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu, tokens]))
"""


def _one_mb_run(server: Path, path: Path, family: str) -> tuple[float, float, int]:
    env = {**os.environ, "PYTHONPATH": str(server)}
    done = subprocess.run(
        [sys.executable, "-c", _ONE_MB, str(path), family],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu, tokens = json.loads(done.stdout)
    return wall, cpu, tokens


def _one_mb(samples: list[Sample], main: Path | None) -> list[str]:
    """Seconds to count a 1 MB tool result (the corpus's files one after another) in this tree
    and in main's (ctok's own count), beside tiktoken's o200k on the same text; the counts must
    agree with ctok's whole-text count."""
    blob = "\n".join(s.text for s in samples)
    while len(blob) < 1_000_000:
        blob += blob
    tool_result = blob[:1_000_000]
    o200k = load_encoding("o200k_base")
    rows = [
        "| family | tree | wall s | CPU s | tokens | = ctok |",
        "|---|---|---:|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="tokend-claude-1mb-") as folder:
        path = Path(folder) / "tool_result.txt"
        path.write_text(tool_result, encoding="utf-8")
        for family in ("claude-v3", "claude-v4.7", "claude-v4.8"):
            truth = _oracle(tool_result, family)
            trees = {"this tree": ROOT / "server"}
            if main is not None:
                trees[f"main {MAIN_REV}"] = main / "server"
            for label, server in trees.items():
                runs = [_one_mb_run(server, path, family) for _ in range(REPEATS)]
                rows.append(
                    f"| {family} | {label} | {statistics.median(r[0] for r in runs):.2f} "
                    f"| {statistics.median(r[1] for r in runs):.2f} | {runs[0][2]:,} "
                    f"| {'yes' if all(r[2] == truth for r in runs) else 'NO'} |"
                )
        walls = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            o200k.encode_ordinary(tool_result)
            walls.append(time.perf_counter() - started)
        rows.append(
            f"| o200k_base (tiktoken) | this process | {statistics.median(walls):.2f} | | | |"
        )
    return rows


def _stall(model: str, tool_result: str) -> dict[str, float]:
    """Snapshot latency (ms) on one connection while another appends `tool_result` to a `model`
    session of the same daemon; with the append's duration (s)."""
    with tempfile.TemporaryDirectory(prefix="tokend-claude-stall-") as folder:
        base = Path(folder)
        env = _env(base)
        env["PYTHONPATH"] = str(ROOT / "server")
        processes = _Processes(base, env)
        try:
            sock = base / "run" / "tokend.sock"
            processes.daemon(sock)
            reader, writer = _unix_client(sock, "reader"), _unix_client(sock, "writer")
            watched = reader.request("session/create", {"model": "gpt-4o"})["sessionId"]
            target = writer.request("session/create", {"model": model})["sessionId"]
            call = {"type": "toolCall", "callId": "c1", "name": "Read", "input": {"path": "x"}}
            writer.request(
                "session/append",
                {"sessionId": target, "message": {"role": "assistant", "parts": [call]}},
            )
            idle = []
            for _ in range(200):
                started = time.perf_counter()
                reader.request("budget/snapshot", {"sessionId": watched})
                idle.append((time.perf_counter() - started) * 1000)
            part = {"type": "toolResult", "callId": "c1", "name": "Read", "output": tool_result}
            message = {"role": "tool", "parts": [part]}
            writer.next_id += 1
            frame = _frame(
                writer.next_id, "session/append", {"sessionId": target, "message": message}
            )
            answered = threading.Event()

            def append() -> None:
                view = memoryview(frame)
                while view:
                    view = view[os.write(writer.write_fd, view) :]
                while not _answered(writer, writer.next_id):
                    select.select([writer.read_fd], [], [], 1.0)
                answered.set()

            thread = threading.Thread(target=append, daemon=True)
            began = time.perf_counter()
            thread.start()
            during = []
            while not answered.is_set():
                started = time.perf_counter()
                reader.request("budget/snapshot", {"sessionId": watched})
                during.append((time.perf_counter() - started) * 1000)
            append_s = time.perf_counter() - began
            thread.join()
            reader.close()
            writer.close()
        finally:
            processes.stop_all()
    return {
        "idle_p50": statistics.median(idle),
        "n": len(during),
        "p50": statistics.median(during),
        "p99": _percentile(during, 0.99),
        "max": max(during),
        "append_s": append_s,
    }


def _stalls(samples: list[Sample]) -> list[str]:
    text = "\n".join(s.text for s in samples if s.source in ("python", "javascript"))
    while len(text) < 1_000_000:
        text += text
    tool_result = text[:1_000_000]
    rows = [
        "| appended to | append s | snapshots during it | idle p50 ms | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for model in ("claude-opus-4-6", "gpt-4o"):
        got = _stall(model, tool_result)
        rows.append(
            f"| {model} | {got['append_s']:.2f} | {got['n']} | {got['idle_p50']:.2f} "
            f"| {got['p50']:.2f} | {got['p99']:.2f} | {got['max']:.1f} |"
        )
    return rows


class _Ctok:
    """ctok's own count of a text's content (what main's ClaudeCounter gave, in pieces)."""

    def __init__(self, family: str) -> None:
        from ctok.main import _family, _model

        self._model = _model(_family(FAMILIES[family][0]))
        self.name = f"ctok-{family}"

    exact = True

    def count(self, text: str) -> int:
        from ctok.engine import tile

        return int(tile(text, self._model)[0])


class _O200k:
    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding

    name = "o200k_base"
    exact = True

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))


def run() -> str:
    samples = gather_corpus(files_per_source=FILES_PER_SOURCE)
    size = sum(len(s.text.encode()) for s in samples)
    out = ["### Claude tier (bench/claude.py)", ""]
    out += [
        f"Counting accuracy against ctok on the estimator corpus ({len(samples)} files, "
        f"{size / 1e6:.1f} MB; mean absolute % error per file):",
        "",
        *_accuracy(samples),
        "",
    ]
    with baseline_tree(BEFORE_CLAUDE_REV) as before, baseline_tree(MAIN_REV) as main:
        out += [
            f"A 1 MB tool result counted once, each tree in its own process (median of {REPEATS}; "
            "CPU seconds beside wall seconds, the machine being shared):",
            "",
            *_one_mb(samples, main),
            "",
            "Replay of the long shared Claude Code session (claude-opus-4-6), each run a "
            "`tokend replay` process (start-up included in its time):",
            "",
            *_replays(before, main),
            "",
            "A Claude session's repo map of this repository (`repoMap/get`, claude-opus-4-6):",
            "",
            *_repo_maps(before),
            "",
        ]
    out += ["Throughput on the same corpus, one thread:", "", *_throughput(samples), ""]
    out += [
        "`budget/snapshot` on one connection of the real `tokend serve` while another appends a "
        "1 MB tool result (real .py/.js files):",
        "",
        *_stalls(samples),
        "",
    ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(run())
