"""1,000 appends from two clients racing an automatic compaction, on a real daemon.

`tokend serve` on a private socket; a session is filled to just under its autocompact threshold;
then two connections append 500 messages each at once, each waiting for its reply before the
next (as an agent does). The appends push the gauge over the threshold, so compaction.auto runs
(off the event loop) while the other connection keeps appending. Afterwards every message ever
appended is listed (session/messages includeCompacted) and checked against what each client
sent and was told: none lost, none duplicated, each client's order kept, the live context a
summary followed by messages in order. Used by bench/compaction.py (the figure) and
tests/e2e/test_compaction_append_race.py (the same run, without timing).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.daemon import _Client, _Processes, _unix_client

MODEL = "gpt-4o"
CLIENTS = ("A", "B")
FILL_WORDS = 3_000  # one filler message: ~3,000 tokens
FILL_MARGIN = 6_000  # tokens left under the threshold when the race starts
APPEND_FILLER = "the race keeps every message once and in order " * 12  # ~110 tokens


@dataclass
class RaceResult:
    appends: int
    wall_s: float
    latencies_ms: list[float]
    compactions: list[dict[str, Any]]  # session/didCompact params, automatic ones
    lost: int
    duplicated: int
    out_of_order: int  # messages found before one their client sent earlier
    live_problems: list[str] = field(default_factory=list)
    summarized: int = 0  # race messages the compactions took out of the live context
    overlapped: int = 0  # appends by the other client answered while a compaction ran


def _text(name: str, index: int) -> str:
    return f"{name}#{index:04d} {APPEND_FILLER}"


def _append(client: _Client, sid: str, role: str, text: str, seen: list[dict[str, Any]]) -> Any:
    message = {"role": role, "parts": [{"type": "text", "text": text}]}
    request = client.start_request("session/append", {"sessionId": sid, "message": message})
    while True:
        reply = client.read()
        if reply.get("method") == "session/didCompact":
            seen.append(reply["params"])
        if reply.get("id") == request:
            if "error" in reply:
                raise RuntimeError(f"tokend answered an error: {reply['error']}")
            return reply["result"]


def _fill(client: _Client, sid: str) -> None:
    """Chat until the gauge is FILL_MARGIN under the autocompact threshold."""
    snapshot = client.request("budget/snapshot", {"sessionId": sid})
    step = 0
    while snapshot["usedTokens"] < snapshot["autocompactThreshold"] - FILL_MARGIN - FILL_WORDS:
        role = "user" if step % 2 == 0 else "assistant"
        _append(client, sid, role, f"filler {step} " + "words " * FILL_WORDS, [])
        snapshot = client.request("budget/snapshot", {"sessionId": sid})
        step += 1


def race(appends: int = 1_000, config_toml: str | None = None) -> RaceResult:
    """The race; `config_toml` is the user's config.toml for the daemon (e.g. a [summarizer]
    chain whose model takes a while, to widen the compaction's window)."""
    base = Path(tempfile.mkdtemp(prefix="tkr-"))  # short: a unix socket path holds ~104 bytes
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (base / var.lower()).mkdir()
        env[var] = str(base / var.lower())
    (base / "run").mkdir(mode=0o700)
    if config_toml is not None:
        (base / "xdg_config_home" / "tokend").mkdir()
        (base / "xdg_config_home" / "tokend" / "config.toml").write_text(config_toml)
    env.update(XDG_RUNTIME_DIR=str(base / "run"), TOKEND_DATABASE_URL=f"sqlite:///{base}/r.db")
    processes = _Processes(base, env)
    try:
        sock = base / "d.sock"
        processes.daemon(sock)
        setup = _unix_client(sock, "setup")
        sid = setup.request("session/create", {"model": MODEL})["sessionId"]
        _fill(setup, sid)
        return _run(sock, setup, sid, appends)
    finally:
        processes.stop_all()


def _run(sock: Path, setup: _Client, sid: str, appends: int) -> RaceResult:
    per_client = appends // len(CLIENTS)
    sent: dict[str, list[str]] = {name: [] for name in CLIENTS}  # message ids, in order
    latencies: list[float] = []
    compactions: list[dict[str, Any]] = []
    answered: dict[str, list[float]] = {name: [] for name in CLIENTS}  # reply times
    windows: list[tuple[str, float, float]] = []  # (client, sent, answered) of a trigger
    errors: list[BaseException] = []
    start = threading.Barrier(len(CLIENTS))

    def client_run(name: str, role: str) -> None:
        try:
            client = _unix_client(sock, f"racer {name}")
            start.wait()
            for i in range(per_client):
                began, seen = time.perf_counter(), len(compactions)
                result = _append(client, sid, role, _text(name, i), compactions)
                ended = time.perf_counter()
                latencies.append((ended - began) * 1000)
                answered[name].append(ended)
                sent[name].append(result["messageId"])
                if len(compactions) > seen and compactions[-1].get("automatic"):
                    windows.append((name, began, ended))  # this append ran the compaction
            client.close()
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [
        threading.Thread(target=client_run, args=(name, role))
        for name, role in zip(CLIENTS, ("user", "assistant"), strict=True)
    ]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if errors:
        raise errors[0]
    every = setup.request("session/messages", {"sessionId": sid, "includeCompacted": True})
    live = setup.request("session/messages", {"sessionId": sid})
    setup.close()
    result = _judge(sent, every["messages"], live["messages"], latencies, compactions, wall)
    result.overlapped = sum(
        1
        for name, low, high in windows
        for other in CLIENTS
        if other != name
        for at in answered[other]
        if low < at < high
    )
    return result


def _marker(message: dict[str, Any]) -> str | None:
    for part in message["parts"]:
        text = part.get("text", "")
        if part.get("type") == "text" and text[:1] in CLIENTS and text[1:2] == "#":
            return text.split(" ", 1)[0]
    return None


def _judge(
    sent: dict[str, list[str]],
    every: list[dict[str, Any]],
    live: list[dict[str, Any]],
    latencies: list[float],
    compactions: list[dict[str, Any]],
    wall: float,
) -> RaceResult:
    """Checks against what the clients sent and were told (ids, and the text each wrote)."""
    stored = [m for m in every if _marker(m) is not None]
    counts = Counter(_marker(m) for m in stored)
    expected = {f"{name}#{i:04d}" for name, ids in sent.items() for i in range(len(ids))}
    lost = len(expected - set(counts)) + len(
        {i for ids in sent.values() for i in ids} - {m["messageId"] for m in stored}
    )
    duplicated = sum(n - 1 for n in counts.values() if n > 1)
    out_of_order = 0
    for name in CLIENTS:
        order = [int(str(_marker(m))[2:]) for m in stored if str(_marker(m)).startswith(name)]
        out_of_order += sum(1 for a, b in zip(order, order[1:], strict=False) if b <= a)
        ids = [m["messageId"] for m in stored if str(_marker(m)).startswith(name)]
        out_of_order += 0 if ids == sent[name] else 1
    problems: list[str] = []
    live_ids = [m["messageId"] for m in live]
    if len(set(live_ids)) != len(live_ids):
        problems.append("a message is twice in the live context")
    if compactions and live[0]["kind"] != "summary":
        problems.append("the live context does not start with the summary")
    position = {m["messageId"]: i for i, m in enumerate(every)}
    seqs = [position[i] for i in live_ids if i in position]
    if any(b <= a for a, b in zip(seqs[1:], seqs[2:], strict=False)):
        problems.append("the live context is out of order")
    in_live = {i for i in live_ids}
    summarized = sum(1 for m in stored if m["messageId"] not in in_live)
    for m in stored:
        if m["messageId"] not in in_live and not m.get("compactedBy"):
            problems.append(f"{_marker(m)} is neither live nor marked compacted")
    automatic = [c for c in compactions if c.get("automatic")]
    return RaceResult(
        appends=sum(len(ids) for ids in sent.values()),
        wall_s=wall,
        latencies_ms=latencies,
        compactions=automatic,
        lost=lost,
        duplicated=duplicated,
        out_of_order=out_of_order,
        live_problems=problems,
        summarized=summarized,
    )


def figure() -> str:
    """The race as a BENCHMARKS.md section."""
    result = race()
    lat = sorted(result.latencies_ms)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    done = [a for c in result.compactions for a in c["actions"] if a["kind"] != "skip"]
    kinds = ", ".join(f"{a['kind']} ({a['parts']} messages)" for a in done) or "none"
    return "\n".join(
        [
            "### Appends racing an automatic compaction (real daemon, two clients)\n",
            f"{result.appends:,} appends from two connections at once (each waits for its reply), "
            "started just under the autocompact threshold of a gpt-4o session; the compaction "
            "runs off the event loop while the other connection keeps appending.\n",
            "| appends | lost | duplicated | out of order | live-context problems "
            "| automatic compactions | other client's appends answered during them "
            "| race messages summarized | wall | append p50 / p99 |",
            "|---|---|---|---|---|---|---|---|---|---|",
            f"| {result.appends:,} | {result.lost} | {result.duplicated} | "
            f"{result.out_of_order} | {len(result.live_problems)} | {len(result.compactions)}: "
            f"{kinds} | {result.overlapped} | {result.summarized} | {result.wall_s:.1f} s | "
            f"{statistics.median(lat):.1f} / {p99:.1f} ms |",
            "",
        ]
    )


if __name__ == "__main__":
    print(figure())  # noqa: T201
