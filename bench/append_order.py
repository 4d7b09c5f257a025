"""Pipelined appends and cancelled appends on a real `tokend serve` (issue 26, "Writes").

Two runs, each on a fresh daemon over a private unix socket and SQLite file, started from a given
source tree (PYTHONPATH=<tree>/server), so the same run measures this tree beside today's daemon:

- `pipelined`: one connection sends N `session/append` requests with 16 in flight (it sends the
  next as soon as one is answered), messages of 5 to 3,000 words, and every tenth exchange an
  assistant toolCall with its toolResult pipelined right behind it. Oracle: the order of
  `session/messages` against the order the client sent (each message carries its send index in
  its text), and the errors the client received.
- `cancels`: per trial, a toolCall then a ~1.5 MB toolResult (a file read: counted whole), and a
  `$/cancelRequest` for it at a random point of the time an uncancelled one takes. Oracle: the
  reply (RequestCancelled or a result), whether the message is stored (`session/messages`), and
  `budget/snapshot`'s version against `session/reload`'s (the store's) and against the version
  the previous trial left (no gap).

Used by tests/daemon/test_session_append_order.py (fewer appends, no timing) and `make bench`.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.baseline import BEFORE_TRUST_REV, ROOT, baseline_tree
from bench.daemon import _Client, _Processes, _unix_client

MODEL = "gpt-4o"
IN_FLIGHT = 16
REQUEST_CANCELLED = -32800
CONFIG = "[compaction]\nauto = false\n"  # the order alone is measured, not compaction's work
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
BIG_LINE = "src/module_{:05d}.c:120:7: warning: unused variable 'tmp' [-Wunused-variable]\n"


@dataclass
class PipelineResult:
    appends: int
    wall_s: float
    errors: list[str]  # the error messages the client received
    stored: int  # appends found in session/messages
    out_of_place: int  # appends stored at another position than their send index
    inversions: int  # appends stored right after one sent later

    @property
    def per_s(self) -> float:
        return self.appends / self.wall_s


@dataclass
class CancelResult:
    trials: int
    cancelled: int = 0  # answered RequestCancelled
    completed: int = 0  # answered with a result
    lies: list[str] = field(default_factory=list)  # every broken promise, one line each


class Daemon:
    """`tokend serve` from `tree` on a private base dir; `stop` ends it by its PID."""

    def __init__(self, tree: Path) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="tko-"))  # short: unix socket paths
        env = dict(os.environ)
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            (self.base / var.lower()).mkdir()
            env[var] = str(self.base / var.lower())
        (self.base / "run").mkdir(mode=0o700)
        (self.base / "xdg_config_home" / "tokend").mkdir()
        (self.base / "xdg_config_home" / "tokend" / "config.toml").write_text(CONFIG)
        env.update(
            XDG_RUNTIME_DIR=str(self.base / "run"),
            TOKEND_DATABASE_URL=f"sqlite:///{self.base}/o.db",
            PYTHONPATH=str(tree / "server"),
        )
        self.processes = _Processes(self.base, env)
        self.sock = self.base / "d.sock"
        self.processes.daemon(self.sock)

    def client(self, name: str) -> _Client:
        return _unix_client(self.sock, name)

    def stop(self) -> None:
        self.processes.stop_all()
        shutil.rmtree(self.base, ignore_errors=True)


def _marked(index: int, words: int) -> str:
    body = " ".join(WORDS[(index + i) % len(WORDS)] for i in range(words))
    return f"#{index:06d} {body}"


def _index(message: dict[str, Any]) -> int | None:
    for part in message["parts"]:
        text = part.get("text") or part.get("output") or ""
        if isinstance(text, str) and text.startswith("#") and text[1:7].isdigit():
            return int(text[1:7])
    return None


def _messages(
    count: int, seed: int, tools: bool = True, long_share: float = 0.05
) -> list[dict[str, Any]]:
    """`count` messages: 5 to 300 words, `long_share` of them 3,000 words, with `tools` every
    tenth exchange a toolCall and its toolResult; each carries its send index."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    while len(out) < count:
        i = len(out)
        if tools and i % 10 == 8 and count - i >= 2:
            call = {"type": "toolCall", "callId": f"c{i}", "name": "Bash", "input": {"n": i}}
            out.append(
                {"role": "assistant", "parts": [{"type": "text", "text": _marked(i, 3)}, call]}
            )
            result = {
                "type": "toolResult",
                "callId": f"c{i}",
                "name": "Bash",
                "output": _marked(i + 1, 20),
            }
            out.append({"role": "tool", "parts": [result]})
            continue
        long = rng.random() < long_share
        words = rng.randint(5, 300) if not long else 3_000
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "parts": [{"type": "text", "text": _marked(i, words)}]})
    return out  # fmt: skip


def pipelined(
    tree: Path,
    appends: int,
    in_flight: int = IN_FLIGHT,
    seed: int = 26,
    tools: bool = True,
    long_share: float = 0.05,
) -> PipelineResult:
    """`appends` appends from one connection, `in_flight` at a time (toolCall/toolResult pairs
    among them with `tools`, `long_share` of 3,000 words); judged on session/messages."""
    daemon = Daemon(tree)
    try:
        client = daemon.client("pipeliner")
        sid = client.request("session/create", {"model": MODEL})["sessionId"]
        messages = _messages(appends, seed, tools, long_share)
        errors: list[str] = []
        waiting: deque[int] = deque()
        began = time.perf_counter()
        sent = 0
        while sent < len(messages) or waiting:
            while sent < len(messages) and len(waiting) < in_flight:
                params = {"sessionId": sid, "message": messages[sent]}
                waiting.append(client.start_request("session/append", params))
                sent += 1
            reply = client.read()
            if reply.get("id") in waiting:
                waiting.remove(reply["id"])
                if "error" in reply:
                    errors.append(str(reply["error"].get("message")))
        wall = time.perf_counter() - began
        listed = client.request("session/messages", {"sessionId": sid, "includeCompacted": True})
        client.close()
    finally:
        daemon.stop()
    order = [i for i in (_index(m) for m in listed["messages"]) if i is not None]
    return PipelineResult(
        appends=appends,
        wall_s=wall,
        errors=errors,
        stored=len(order),
        out_of_place=sum(1 for pos, i in enumerate(sorted(order)) if order[pos] != i),
        inversions=sum(1 for a, b in zip(order, order[1:], strict=False) if b < a),
    )


def _big_output(index: int, lines: int) -> str:
    return f"#{index:06d} big\n" + "".join(BIG_LINE.format(i) for i in range(lines))


def _replies(client: _Client, request_ids: list[int]) -> list[dict[str, Any]]:
    """The replies to `request_ids` (in any order on the wire), in the order of the ids."""
    got: dict[int, dict[str, Any]] = {}
    while len(got) < len(request_ids):
        message = client.read()
        if message.get("id") in request_ids:
            got[message["id"]] = message
    return [got[i] for i in request_ids]


def cancels(tree: Path, trials: int, lines: int = 20_000, seed: int = 40) -> CancelResult:
    """`trials` appends of a big tool result, each to a new session, each cancelled at a
    random point of the time an uncancelled one takes."""
    rng = random.Random(seed)
    daemon = Daemon(tree)
    result = CancelResult(trials)
    try:
        client = daemon.client("canceller")
        timed = [_big_append(client, _session(client), 900_000 + i, lines, None) for i in range(3)]
        took = statistics.median(t for t, _, _ in timed)
        for trial in range(trials):
            sid = _session(client)
            cancel_after = rng.uniform(0.0, 1.0) * took
            _, reply, version = _big_append(client, sid, trial, lines, cancel_after)
            _judge_trial(client, sid, trial, reply, version, result)
        client.close()
    finally:
        daemon.stop()
    return result


def _session(client: _Client) -> str:
    params = {"model": MODEL, "contextWindow": 1_000_000}
    return str(client.request("session/create", params)["sessionId"])


def _big_append(
    client: _Client, sid: str, index: int, lines: int, cancel_after: float | None
) -> tuple[float, dict[str, Any], int]:
    """A toolCall, then its big toolResult (cancelled after `cancel_after` seconds when given):
    (seconds the result's append took, its reply, the version the toolCall left)."""
    call = {"type": "toolCall", "callId": f"b{index}", "name": "Read", "input": {"file_path": "x"}}
    version = client.request(
        "session/append", {"sessionId": sid, "message": {"role": "assistant", "parts": [call]}}
    )["version"]
    part = {
        "type": "toolResult",
        "callId": f"b{index}",
        "name": "Read",
        "output": _big_output(index, lines),
    }
    began = time.perf_counter()
    request = client.start_request(
        "session/append", {"sessionId": sid, "message": {"role": "tool", "parts": [part]}}
    )
    if cancel_after is not None:
        time.sleep(cancel_after)
        client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": request}})
    reply = _replies(client, [request])[0]
    return time.perf_counter() - began, reply, version  # fmt: skip


def _judge_trial(
    client: _Client, sid: str, trial: int, reply: dict[str, Any], version: int, out: CancelResult
) -> None:
    """Check one trial (a new session; `version` after its toolCall) against the store."""
    snapshot = client.request("budget/snapshot", {"sessionId": sid})["version"]
    reloaded = client.request("session/reload", {"sessionId": sid})["version"]
    listed = client.request("session/messages", {"sessionId": sid})
    stored = any(_index(m) == trial and m["role"] == "tool" for m in listed["messages"])
    error = reply.get("error")
    expected = version
    if error is not None and error.get("code") == REQUEST_CANCELLED:
        out.cancelled += 1
        if stored:
            out.lies.append(f"trial {trial}: RequestCancelled, yet the message is stored")
    elif error is None:
        out.completed += 1
        expected += 1
        if not stored:
            out.lies.append(f"trial {trial}: a result, yet the message is not stored")
        if reply["result"]["version"] != expected:
            out.lies.append(
                f"trial {trial}: answered version {reply['result']['version']}, not {expected}"
            )
    else:
        out.lies.append(f"trial {trial}: error {error}")
    if snapshot != reloaded:
        out.lies.append(
            f"trial {trial}: budget/snapshot says version {snapshot}, the store {reloaded}"
        )
    if reloaded != expected:
        out.lies.append(f"trial {trial}: the store is at version {reloaded}, not {expected}")


# -- the bench section -------------------------------------------------------------------------

APPENDS = 10_000
CANCELS = 100
ROUNDS = 3  # throughput runs per daemon, interleaved: the median is quoted


def run() -> str:
    with baseline_tree(BEFORE_TRUST_REV) as before:
        trees = [("this tree", ROOT)]
        if before is not None:
            trees.append((f"main at {BEFORE_TRUST_REV}", before))
        order = {name: pipelined(tree, APPENDS) for name, tree in trees}
        rates: dict[str, list[float]] = {name: [] for name, _ in trees}
        short: dict[str, list[float]] = {name: [] for name, _ in trees}
        for _ in range(ROUNDS):
            for name, tree in trees:
                rates[name].append(pipelined(tree, APPENDS, tools=False).per_s)
                short[name].append(pipelined(tree, APPENDS, tools=False, long_share=0).per_s)
        cancelled = {name: cancels(tree, CANCELS) for name, tree in trees}
    lines = [
        "### Pipelined and cancelled appends (bench/append_order.py)\n",
        f"A real `tokend serve` per run. {APPENDS:,} `session/append` from one connection to one "
        f"session, {IN_FLIGHT} in flight, 5 to 3,000 words, every tenth exchange a toolCall with "
        "its toolResult right behind it; the order judged on `session/messages`. Throughput: "
        f"the same without the tool pairs (nothing refused on either daemon), {ROUNDS} runs per "
        f"daemon, interleaved. Then {CANCELS} appends of a ~1.5 MB file-read tool result, each "
        "to a new session and `$/cancelRequest`ed at a random point of an uncancelled one's "
        "time; each judged on `session/reload` + `session/messages` (the store) and "
        "`budget/snapshot`. A broken promise: RequestCancelled yet stored, a result yet not "
        "stored, the snapshot's version other than the store's, a version gap. Baseline: main "
        f"before this work ({BEFORE_TRUST_REV}), same run.\n",
        "| daemon | stored out of send order | toolResults refused | appends/s, median (runs) "
        "| the same without 3,000-word messages | cancels: RequestCancelled / result "
        "| broken promises |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, _ in trees:
        got, cancel = order[name], cancelled[name]
        lines.append(
            f"| {name} | {got.out_of_place:,} of {got.appends:,} | {len(got.errors):,} | "
            f"{_rates(rates[name])} | {_rates(short[name])} | {cancel.cancelled} / "
            f"{cancel.completed} | {len(cancel.lies)} |"
        )
    if len(trees) == 2:
        ours, base = (statistics.median(rates[n]) for n, _ in trees)
        ours_short, base_short = (statistics.median(short[n]) for n, _ in trees)
        lines.append(
            f"\nThroughput with {IN_FLIGHT} in flight: {ours / base:.2f}x the baseline's median; "
            f"without the 3,000-word messages {ours_short / base_short:.2f}x (single runs "
            "vary by a third on a shared machine: read the medians)."
        )
        example = cancelled[trees[1][0]].lies[:2] + order[trees[1][0]].errors[:1]
        if example:
            lines.append("Baseline, for example: " + "; ".join(example) + ".")
    return "\n".join(lines) + "\n"


def _rates(runs: list[float]) -> str:
    return f"{statistics.median(runs):,.0f} ({', '.join(f'{x:,.0f}' for x in runs)})"


if __name__ == "__main__":
    print(run())  # noqa: T201
