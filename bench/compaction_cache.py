"""Cache replay: what each prune policy bills on the real Claude Code sessions (issue 21).

Each shared session (shared/data/claude-code-sessions) is replayed call by call through a real
daemon (`tokend serve` on a private socket and store): before call i the transcript up to that
call is imported (tokend import's code, on the daemon's store, at the transcript's own times;
then `session/reload`), the agent asks `session/compact {strategy: "prune"}` (not under "no
prune"), and `context/assemble {format: "anthropic"}` builds the request that would be sent.
The request's messages are counted with tiktoken's o200k_base (each message's JSON), and billed
as Anthropic bills a prompt cache: while the cache is warm (the transcript's own gap since the
previous call, under the lifetime its usage shows: 1 hour when it wrote `ephemeral_1h` entries)
the longest run of leading messages equal to the previous request's is a cache read, the rest a
cache write; an expired cache writes everything. Prices: the catalog's claude-opus-4-6 rates
(input $5, cache read 0.1x, 5-minute write 1.25x, 1-hour write 2x per million); output is what the
transcript recorded, the same under every policy, and left out. The system prompt and tools
(the same prefix under every policy) are left out too.

Policies:
  no prune        never asked to prune
  eager           compaction.prune_policy = "eager": OpenCode's rule at every call
  cache           compaction.prune_policy = "cache" (this branch's default)
  main eager      today's main (MAIN_REV) asked the same: its prune is OpenCode's rule
  provider context editing
                  the "no prune" replay's assemblies ask `contextEditing: true` (the settings'
                  defaults, which are Anthropic's: trigger 100,000 input tokens, keep 3 tool
                  uses, no clear_at_least); the daemon returns the `context_management` edits
                  and the clearing is done by the provider. The replay cannot call Anthropic, so
                  the bench models the API's server-side clearing (_edited): past the edit's
                  trigger, counted here with o200k over the messages, every tool result but the
                  newest `keep` (of tools not excluded) is replaced by a short placeholder, the
                  same edit at every call, applied before the cache is billed. Anthropic's own
                  count, its placeholder text and the system prompt and tools (left out) would
                  move the trigger a little.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.baseline import baseline_tree
from bench.daemon import _Processes, _unix_client

SESSIONS_DIR = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "claude-code-sessions"
)
SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d.jsonl", "tool_heavy.jsonl")
MAIN_REV = "2c3728f"
MODEL_PRICES = "claude-opus-4-6"
WINDOW = 200_000  # the sessions' window, as recorded (the catalog lists the 1M extended one)
CLEARED = "[cleared by context editing]"  # the placeholder the model of the API puts in


@dataclass
class Call:
    first_line: int  # the call's first record in the transcript
    at: float  # its timestamp, seconds
    ttl_s: int  # the cache lifetime its usage shows


@dataclass
class Bill:
    calls: int = 0
    read: int = 0
    write: int = 0
    usd: float = 0.0
    prunes: int = 0
    after_prune_read_share: list[float] = field(default_factory=list)  # warm calls only


def _calls(lines: Sequence[str]) -> list[Call]:
    from datetime import datetime

    seen: dict[tuple[str, str], Call] = {}
    for n, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") != "assistant" or "usage" not in record.get("message", {}):
            continue
        key = (record["message"].get("id"), record.get("requestId"))
        usage = record["message"]["usage"]
        one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0) > 0
        stamp = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()
        if key not in seen:
            seen[key] = Call(n, stamp, 3_600 if one_hour else 300)
    return list(seen.values())


class Counter:
    """o200k_base tokens of a message's JSON, remembered by its text."""

    def __init__(self) -> None:
        from tokend.adapters.tokenizers import load_encoding

        self.encoding = load_encoding("o200k_base")
        self.memo: dict[str, int] = {}

    def __call__(self, message: dict[str, Any]) -> int:
        text = json.dumps(message, sort_keys=True)
        if text not in self.memo:
            self.memo[text] = len(self.encoding.encode(text, disallowed_special=()))
        return self.memo[text]


def _prices() -> tuple[float, float, float, float]:
    """input, cache read, 5-minute write, 1-hour write: $/token from the packaged catalog."""
    from tokend.adapters.packaged_data import packaged_catalog

    catalog = packaged_catalog()
    if catalog is None:
        raise FileNotFoundError("the model catalog is missing: run scripts/bootstrap")
    entry = json.loads(catalog.read_text())[MODEL_PRICES]
    return (
        entry["input_cost_per_token"],
        entry["cache_read_input_token_cost"],
        entry["cache_creation_input_token_cost"],
        entry.get("cache_creation_input_token_cost_above_1hr") or 2 * entry["input_cost_per_token"],
    )


def _bill(requests: Sequence[tuple[list[dict[str, Any]], Call, bool]], count: Counter) -> Bill:
    """Bill each request against the one before it (see the module docstring)."""
    _, read_price, write_5m, write_1h = _prices()
    bill = Bill()
    previous: list[dict[str, Any]] | None = None
    previous_at: float | None = None
    previous_pruned = False
    for messages, call, pruned in requests:
        sizes = [count(m) for m in messages]
        warm = previous_at is not None and call.at - previous_at < call.ttl_s
        shared = 0
        if warm and previous is not None:
            for mine, theirs in zip(messages, previous, strict=False):
                if mine != theirs:
                    break
                shared += 1
        read = sum(sizes[:shared])
        write = sum(sizes[shared:])
        write_price = write_1h if call.ttl_s == 3_600 else write_5m
        bill.calls += 1
        bill.read += read
        bill.write += write
        bill.usd += read * read_price + write * write_price
        if pruned:
            bill.prunes += 1
        if previous_pruned and warm and read + write:
            bill.after_prune_read_share.append(read / (read + write))
        previous, previous_at, previous_pruned = messages, call.at, pruned
    return bill


def _edited(
    messages: list[dict[str, Any]], management: dict[str, Any] | None, count: Counter
) -> list[dict[str, Any]]:
    """The request as Anthropic's API edits it server-side, modelled (the replay cannot call
    Anthropic): for the `clear_tool_uses_20250919` edit the daemon returned, once the messages
    pass its `trigger` (counted here with o200k, as everything is billed), every tool result
    but the newest `keep` whose tool is not excluded is replaced by CLEARED (its tool_use input
    too with `clear_tool_inputs`), unless that frees less than `clear_at_least`."""
    edit = next(
        (e for e in (management or {}).get("edits", []) if e["type"] == "clear_tool_uses_20250919"),
        None,
    )
    if edit is None or sum(count(m) for m in messages) <= edit["trigger"]["value"]:
        return messages
    names = {
        b["id"]: b["name"]
        for m in messages
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    excluded = set(edit.get("exclude_tools", ()))
    places = [
        (i, j, block["tool_use_id"])
        for i, m in enumerate(messages)
        if isinstance(m.get("content"), list)
        for j, block in enumerate(m["content"])
        if isinstance(block, dict)
        and block.get("type") == "tool_result"
        and names.get(block.get("tool_use_id")) not in excluded
    ]
    keep = edit["keep"]["value"]
    gone = places[: max(0, len(places) - keep)]
    clear = {(i, j) for i, j, _ in gone}
    ids = {use_id for _, _, use_id in gone} if edit.get("clear_tool_inputs") else set()
    edited = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if not isinstance(content, list):
            edited.append(m)
            continue
        blocks = [
            {**b, "content": CLEARED}
            if (i, j) in clear
            else {**b, "input": {}}
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") in ids
            else b
            for j, b in enumerate(content)
        ]
        edited.append({**m, "content": blocks})
    least = edit.get("clear_at_least", {}).get("value", 0)
    if sum(count(m) for m in messages) - sum(count(m) for m in edited) < least:
        return messages
    return edited


Request = tuple[list[dict[str, Any]], Call, bool, dict[str, Any] | None]


def _replay(
    path: Path,
    policy: str | None,
    tree: Path | None,
    rule: tuple[int, int] | None = None,
    edits: bool = False,
) -> list[Request]:
    """The requests of every call but the first, as the daemon of `tree` (None: this one)
    assembles them under `policy` (None: never asked to prune; "main": asked, main's rule),
    with the `context_management` it returns when asked for provider context editing."""
    from tokend.commands.importer import import_events
    from tokend.service.app import open_app

    lines = path.read_text().splitlines(keepends=True)
    calls = _calls(lines)
    base = Path(tempfile.mkdtemp(prefix="tkcache-"))
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        (base / var.lower()).mkdir()
        env[var] = str(base / var.lower())
    (base / "run").mkdir(mode=0o700)
    config = "[compaction]\n"
    if policy in ("cache", "eager"):
        config += f'prune_policy = "{policy}"\n'
    if rule is not None:
        config += f"prune_protect_tokens = {rule[0]}\nprune_minimum_tokens = {rule[1]}\n"
    (base / "xdg_config_home" / "tokend").mkdir()
    (base / "xdg_config_home" / "tokend" / "config.toml").write_text(config)
    url = f"sqlite:///{base}/c.db"
    env.update(XDG_RUNTIME_DIR=str(base / "run"), TOKEND_DATABASE_URL=url)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "server")
    processes = _Processes(base, env)
    partial = base / path.name
    app = open_app(base, url)
    requests: list[Request] = []
    try:
        sock = base / "d.sock"
        processes.daemon(sock)
        client = _unix_client(sock, "cache replay")
        sid: str | None = None
        for call in calls[1:]:
            partial.write_text("".join(lines[: call.first_line]))
            if sid is not None:
                app.service.sessions.reload(sid)
            sid = import_events(app.service, partial, WINDOW).session_id
            client.request("session/reload", {"sessionId": sid})
            pruned = False
            if policy is not None:
                reply = client.request("session/compact", {"sessionId": sid, "strategy": "prune"})
                pruned = any(a["kind"] == "prune" for a in reply["actions"])
            asked: dict[str, Any] = {"sessionId": sid, "format": "anthropic"}
            if edits:
                asked["contextEditing"] = True
            assembled = client.request("context/assemble", asked)
            management = assembled.get("contextManagement")
            requests.append((assembled["messages"], call, pruned, management))
        client.close()
    finally:
        app.close()
        processes.stop_all()
        shutil.rmtree(base, ignore_errors=True)
    return requests


def _row(name: str, bill: Bill, none_usd: float) -> str:
    share = bill.after_prune_read_share
    median = f"{statistics.median(share):.1%}" if share else "n/a"
    low = f"{min(share):.1%}" if share else "n/a"
    return (
        f"| {name} | {bill.calls} | {bill.prunes} | {bill.read:,} | {bill.write:,} | "
        f"${bill.usd:.2f} | {bill.usd / none_usd:.3f} | {median} (min {low}) |"
    )


RULES = {
    "OpenCode's defaults (protect 40,000, minimum 20,000)": None,
    "tighter (protect 10,000, minimum 5,000)": (10_000, 5_000),
}


def _bills(path: Path, main: Path | None, count: Counter) -> list[tuple[str, Bill]]:
    none = _replay(path, None, None, edits=True)
    if any(m is None for *_, m in none):
        raise RuntimeError("context/assemble returned no contextManagement for the replay")
    rows = [("no prune", _bill([(m, c, p) for m, c, p, _ in none], count))]
    edited = [(_edited(m, e, count), c, False) for m, c, _, e in none]
    label = "provider context editing (tokend's edits, Anthropic's defaults; clearing modelled)"
    rows.append((label, _bill(edited, count)))
    for label, rule in RULES.items():
        runs: dict[str, Callable[[], Any]] = {
            "eager": lambda r=rule: _replay(path, "eager", None, r),
            "cache (this policy)": lambda r=rule: _replay(path, "cache", None, r),
        }
        if main is not None:
            runs[f"main {MAIN_REV}"] = lambda r=rule: _replay(path, "main", main, r)
        for name, replay in runs.items():
            try:
                requests = replay()
            except RuntimeError as exc:  # main's daemon and this tree's store schema
                NOT_RUN.add(f"{name}: not replayed: {str(exc).splitlines()[-1]}")
                continue
            bill = _bill([(m, c, p) for m, c, p, _ in requests], count)
            rows.append((f"{name}, {label}", bill))
    return rows


NOT_RUN: set[str] = set()  # baseline rows that could not run, and why


def _verdicts(bills: dict[str, Bill]) -> list[str]:
    """One line per rule: the cache policy's cost beside eager's and no prune's."""
    none = bills["no prune"].usd
    lines = []
    for label in RULES:
        cache, eager = bills[f"cache (this policy), {label}"], bills[f"eager, {label}"]
        same = "as many as eager" if cache.prunes == eager.prunes else "not as many as eager"
        lines.append(
            f"- {label}: cache ${cache.usd:.2f} ({cache.prunes} prunes, {same}) beside eager "
            f"${eager.usd:.2f} ({eager.prunes}) and no prune ${none:.2f}: "
            f"{'less than both' if cache.usd < min(eager.usd, none) else 'NOT less than both'}"
        )
    return lines


def run() -> str:
    count = Counter()
    out = [
        "## Compaction: the prompt cache on replayed sessions (issue 21)",
        "",
        "Each call of the shared Claude Code sessions replayed through a real daemon (the "
        "transcript imported up to the call at its own times, then `session/compact` prune, "
        "then `context/assemble` anthropic), billed as Anthropic bills the cache "
        "(bench/compaction_cache.py: read = the leading messages shared with the previous "
        "request while the cache is warm, write = the rest, counted with o200k_base; "
        "claude-opus-4-6's catalog prices: read $0.50, 1-hour write $10 per million; the "
        "system prompt, tools and output left out: the same under every policy); the "
        "sessions' 200,000-token window, as recorded. eager = "
        "`prune_policy = \"eager\"` (OpenCode's rule before every call); main = today's main "
        "asked the same (its prune is OpenCode's rule). The read share is that of the call "
        "after each prune, where the cache was still warm. Provider context editing = the "
        "no-prune replay's assemblies asked with `contextEditing: true` (the settings' "
        "defaults, Anthropic's: trigger 100,000 input tokens, keep 3 tool uses): the daemon "
        "returns the `clear_tool_uses_20250919` edit and the provider clears; the replay cannot "
        "call Anthropic, so the bench applies that edit as the API documents it (past the "
        "trigger, counted with o200k over the messages, every tool result but the newest 3 "
        "replaced by a short placeholder, before the cache is billed).",
        "",
    ]
    with baseline_tree(MAIN_REV) as main:
        for name in SESSIONS:
            path = SESSIONS_DIR / name
            if not path.is_file():
                raise FileNotFoundError(f"{path}: the shared sessions are missing")
            rows = _bills(path, main, count)
            none = rows[0][1].usd or 1.0
            out += [
                f"`{name}`:",
                "",
                "| policy | calls | prunes | cache read tokens | cache write tokens | "
                "cost | vs no prune | read share after a prune (median) |",
                "|---|---|---|---|---|---|---|---|",
                *(_row(label, bill, none) for label, bill in rows),
                "",
                *_verdicts(dict(rows)),
                "",
            ]
    out += [f"- {line}" for line in sorted(NOT_RUN)]
    return "\n".join(out)
