"""The kill -9 soak: kill -9 at random moments during appends and during `session/compact`, on
the real `tokend serve` and its SQLite file, then a restart: nothing lost, nothing duplicated,
nothing half-applied. The oracle is what a restarted daemon serves (snapshot, assembled
context), compared with what clients were told before the kill and with a compaction that
completed. The moments come from a seeded generator and the measured length of a compaction.

`make test` runs a sample of it (tests/daemon/test_daemon_kill9_consistency.py), `make bench` its full
count (bench/kill9.py).

Found: 7 of 40 kills during `session/compact` left a session half-applied (367 parts marked
pruned, no compaction recorded: after a restart the gauge disagreed with the assembly).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.lsp_client import ConnectionClosed, LspClient

FULL_TRIALS = 40  # kills in `make bench` (bench/kill9.py), in two chains of 20 side by side
CHAINS = 2
START_SECONDS = 180.0  # for a restarted daemon to be ready on a loaded machine (not a figure)
MODEL = "claude-sonnet-4-5"  # counted by estimate: a restarted daemon loads no vocabulary
WINDOW = 1_000_000  # no automatic compaction: each change is the client's own
PLACEHOLDER = "[Old tool result content cleared]"
TURNS = 12  # per session in the compaction template: 12 tool results of ~8,000 tokens


class Chain:
    """One runtime dir and one SQLite file: `tokend serve` started, killed, started again."""

    def __init__(self, base: Path, database: Path) -> None:
        self.base = base
        (base / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
        self.env.update(
            XDG_RUNTIME_DIR=str(base / "run"),
            XDG_STATE_HOME=str(base / "state"),
            XDG_CONFIG_HOME=str(base / "config"),
            XDG_DATA_HOME=str(base / "data"),
            TOKEND_DATABASE_URL=f"sqlite:///{database}",
        )
        self.socket = base / "run" / "tokend" / "daemon.sock"
        self.daemon: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        err = self.base / f"serve-{self.starts}.err"
        with open(err, "wb") as stderr:
            self.daemon = subprocess.Popen(
                [sys.executable, "-m", "tokend", "serve", "--idle-timeout", "0"],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        deadline = time.monotonic() + START_SECONDS
        while "tokend: ready" not in err.read_text(errors="replace"):
            assert self.daemon.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.02)

    def client(self, name: str) -> LspClient:
        client = LspClient.unix(self.socket)
        assert "result" in client.initialize(name)
        return client

    def kill(self) -> None:
        assert self.daemon is not None
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.wait()

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(30)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()


def _texts(client: LspClient, session_id: str) -> list[str]:
    """The text of every message the restarted daemon assembles for the session, in order."""
    reply = client.request(
        "context/assemble", {"sessionId": session_id, "format": "openai"}, timeout=60
    )
    assert "result" in reply, reply
    return [json.dumps(m.get("content")) for m in reply["result"]["messages"]]


# -- appends ------------------------------------------------------------------------------


@dataclass
class AppendLedger:
    """What the clients were told: marker -> (session, version) for every acknowledged append,
    and the markers that were in flight when the daemon was killed."""

    acked: dict[str, tuple[str, int]] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    stored_unacked: set[str] = field(default_factory=set)  # in flight at a kill, yet stored
    errors: list[dict] = field(default_factory=list)  # appends refused with an error reply
    lock: threading.Lock = field(default_factory=threading.Lock)


def _appender(chain: Chain, session_id: str, tag: str, ledger: AppendLedger) -> None:
    try:
        client = chain.client(tag)
        for n in range(1_000_000):
            marker = f"{tag}n{n}"
            with ledger.lock:
                ledger.in_flight.add(marker)
            message = {"role": "user", "parts": [{"type": "text", "text": f"<{marker}> hello"}]}
            reply = client.request(
                "session/append", {"sessionId": session_id, "message": message}, timeout=30
            )
            with ledger.lock:
                ledger.in_flight.discard(marker)
                if "result" not in reply:
                    ledger.errors.append(reply)
                    return
                ledger.acked[marker] = (session_id, reply["result"]["version"])
    except (ConnectionClosed, OSError):
        return  # the daemon was killed


def _check_appends(chain: Chain, sessions: list[str], ledger: AppendLedger) -> dict[str, list]:
    client = chain.client("checker")
    found: dict[str, list[str]] = {}
    problems: dict[str, list] = {
        "lost": [],
        "duplicated": [],
        "unknown": [],
        "versions": [],
        "errors": ledger.errors[:3],
    }
    for session_id in sessions:
        markers = [m for text in _texts(client, session_id) for m in re.findall(r"<(\w+)>", text)]
        for marker in markers:
            found.setdefault(marker, []).append(session_id)
        snapshot = client.request("budget/snapshot", {"sessionId": session_id})["result"]
        acked = [v for s, v in ledger.acked.values() if s == session_id]
        if acked and snapshot["version"] < max(acked):  # a restart never rolls a session back
            problems["versions"].append((session_id, snapshot["version"], max(acked)))
    for marker, (session_id, _) in ledger.acked.items():
        if found.get(marker) != [session_id]:
            problems["lost" if marker not in found else "duplicated"].append(marker)
    for marker, where in found.items():
        if len(where) > 1 and marker not in problems["duplicated"]:
            problems["duplicated"].append(marker)
        if marker in ledger.in_flight:
            ledger.stored_unacked.add(marker)  # committed, its reply lost with the kill: allowed
        elif marker not in ledger.acked and marker not in ledger.stored_unacked:
            problems["unknown"].append(marker)
    versions = [v for v in ledger.acked.values()]
    if len(set(versions)) != len(versions):
        problems["versions"].append("the same version acknowledged twice")
    client.close()
    return {kind: items for kind, items in problems.items() if items}


# -- compactions ----------------------------------------------------------------------------


def _tool_output(turn: int) -> str:
    rng = random.Random(turn)
    words = ["error", "warning", "src/app.py", "line", "def", "return", "None", "ok", "test"]
    return " ".join(rng.choice(words) for _ in range(7000))


def _build_template(base: Path, sessions: int) -> tuple[Path, list[str]]:
    """A SQLite file with `sessions` identical sessions, each with TURNS tool results, none
    compacted yet (the daemon stopped cleanly: the file is whole); and the sessions' ids."""
    database = base / "template.sqlite3"
    chain = Chain(base / "template", database)
    chain.start()
    client = chain.client("builder")
    ids = []
    for _ in range(sessions):
        session_id = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})[
            "result"
        ]["sessionId"]
        ids.append(session_id)
        messages = []
        for turn in range(TURNS):
            call = {"type": "toolCall", "callId": f"c{turn}", "name": "bash", "input": {"n": turn}}
            result = {
                "type": "toolResult",
                "callId": f"c{turn}",
                "name": "bash",
                "output": _tool_output(turn),
            }
            messages += [
                {"role": "user", "parts": [{"type": "text", "text": f"step {turn}"}]},
                {"role": "assistant", "parts": [call]},
                {"role": "tool", "parts": [result]},
            ]
        for message in messages:
            reply = client.request("session/append", {"sessionId": session_id, "message": message})
            assert "result" in reply, reply
    client.close()
    chain.stop()
    return database, ids


def _state(client: LspClient, session_id: str) -> tuple[int, int, int, int, int]:
    """(version, compactions, usedTokens, placeholders assembled, assembled totalTokens)."""
    snapshot = client.request("budget/snapshot", {"sessionId": session_id})["result"]
    reply = client.request(
        "context/assemble", {"sessionId": session_id, "format": "openai"}, timeout=60
    )
    assert "result" in reply, reply
    assembled = reply["result"]
    placeholders = json.dumps(assembled["messages"]).count(PLACEHOLDER)
    return (
        snapshot["version"],
        snapshot["compactions"],
        snapshot["usedTokens"],
        placeholders,
        assembled["totalTokens"],
    )


def _replied(client: LspClient, msg_id: int) -> bool:
    """True if the reply to `msg_id` is already here (without waiting)."""
    try:
        while client.read_message(timeout=0.0).get("id") != msg_id:
            pass
    except (TimeoutError, ConnectionClosed, OSError):
        return False
    return True


@dataclass
class ChainResult:
    trials: int = 0
    append_problems: dict[str, list] = field(default_factory=dict)
    compaction_problems: list[str] = field(default_factory=list)
    kills_with_compaction_replied: int = 0
    compactions_found_applied: int = 0  # (with or without the reply): the kill came after commit


def _start_writers(chain: Chain, sessions: list[str], tag: str, ledger: AppendLedger) -> list:
    """4 clients appending as fast as they are answered, 2 on each session, until the kill."""
    writers = [
        threading.Thread(target=_appender, args=(chain, sessions[n % 2], f"{tag}c{n}", ledger))
        for n in range(4)
    ]
    for writer in writers:
        writer.start()
    return writers


def _kill_and_restart(chain: Chain, writers: list[threading.Thread]) -> None:
    chain.kill()
    for writer in writers:
        writer.join(30)
    chain.start()


def _chain(
    base: Path, template: Path, compactable: list[str], trials: int, seed: int
) -> ChainResult:
    """One database, `trials` kills. Each trial: 4 clients append to 2 sessions; a moment later
    a fifth connection compacts a session of the template; a moment after that (0 to 1.5 times
    what a compaction took under the same load, or 0.7 to 1.05 times it: while it writes),
    kill -9; then a restart, which must serve
    every acknowledged append exactly once, nothing else but appends in flight at the kill,
    and the compacted session exactly as before the compaction or exactly as a completed one
    (the reference: the first session, compacted to the end under the same load)."""
    rng = random.Random(seed)
    base.mkdir()
    database = base / "tokend.sqlite3"
    shutil.copy(template, database)
    chain = Chain(base, database)
    ledger = AppendLedger()
    result = ChainResult()
    try:
        chain.start()
        client = chain.client("setup")
        create = {"model": MODEL, "contextWindow": WINDOW}
        appended = [client.request("session/create", create)["result"]["sessionId"] for _ in "ab"]
        before = _state(client, compactable[0])
        assert before[1] == 0 and before[3] == 0, before
        writers = _start_writers(chain, appended, "ref", ledger)
        time.sleep(0.3)
        started = time.monotonic()
        done = client.request("session/compact", {"sessionId": compactable[0], "strategy": "prune"})
        duration = time.monotonic() - started
        assert done["result"]["actions"][0]["kind"] == "prune", done
        _kill_and_restart(chain, writers)
        after = _state(chain.client("reference"), compactable[0])  # as a restart serves it
        assert after[1] == 1 and after[3] > 0, after
        for trial, session_id in enumerate(compactable[1 : trials + 1]):
            writers = _start_writers(chain, appended, f"t{trial}", ledger)
            compactor = chain.client("compactor")
            compactor.request("budget/snapshot", {"sessionId": session_id})  # loaded, as above
            time.sleep(0.3)
            params = {"sessionId": session_id, "strategy": "prune"}
            compactor.send(
                {"jsonrpc": "2.0", "id": 9, "method": "session/compact", "params": params}
            )
            # Half the kills anywhere in the compaction, half aimed at its end: the writes.
            aim = (0, 1.5) if trial % 2 else (0.7, 1.05)
            time.sleep(rng.uniform(*aim) * duration)
            replied = _replied(compactor, 9)
            _kill_and_restart(chain, writers)
            result.trials += 1
            result.kills_with_compaction_replied += replied
            result.append_problems = _check_appends(chain, appended, ledger)
            state = _state(chain.client("checker"), session_id)
            result.compactions_found_applied += state == after
            if state not in (before, after) or (replied and state != after):
                result.compaction_problems.append(
                    f"trial {trial}: {state}, not {before} or {after}"
                )
            if result.append_problems or result.compaction_problems:
                break
            ledger.in_flight.clear()  # unacknowledged and absent: lost with the kill, as allowed
        return result
    finally:
        chain.stop()
        print(
            f"chain {seed}: {result.trials} kills, {len(ledger.acked)} acknowledged appends, "
            f"{len(ledger.stored_unacked)} stored with their reply lost to the kill, "
            f"{result.kills_with_compaction_replied} kills after the compaction's reply, "
            f"{result.compactions_found_applied} compactions found applied after the restart"
        )


def soak(workdir: Path, trials: int) -> list[ChainResult]:
    """`trials` kills, in CHAINS chains side by side, each on its own copy of one template."""
    per_chain = trials // CHAINS
    template, compactable = _build_template(workdir, sessions=per_chain + 1)
    with ThreadPoolExecutor(CHAINS) as pool:
        return list(
            pool.map(
                lambda n: _chain(workdir / f"c{n}", template, compactable, per_chain, seed=n),
                range(CHAINS),
            )
        )
