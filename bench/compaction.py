"""Compaction: what survives, on the real Claude Code sessions, beside the baselines in one run.

Sessions: shared/data/claude-code-sessions. The big session is cut where Claude Code itself
compacted (its compact_boundary, at 167,094 tokens: its threshold), imported into a temporary
store through `tokend import`'s code and compacted there; the two small ones never reach a
threshold, so they are compacted whole with strategy "full" (everything but the turn in
progress summarized: the hardest case for recall).

Methods, each measured on the context it leaves (the request `context/assemble` builds):
  tokend auto       session/compact "auto" at the threshold: prune, then the extractive summary
  tokend full       session/compact "full" (small sessions)
  prune only        session/compact "prune": old tool output cleared, nothing summarized
  newest 30%        gemini-cli's rule: the newest 30% of the history (by tokens) kept verbatim
  Claude Code       Claude Code's own summary of the same history (the big session's
                    compact_summary message), the context it continued with

Probes, with oracles read from the raw JSONL (not through tokend's parser):
  user words        every text the user typed (user records, not meta, not injected markup)
                    found verbatim in the context
  files             every file_path of a Read/Write/Edit/MultiEdit/NotebookEdit call found
  errors            from every failed tool result (is_error, not a rejected call): its lines
                    that say error/fatal/exception/failed (else its first line), first 300
                    characters, found verbatim
  last call         the last tool call's command or file path found
  size              the context's tokens after / before (as the gauge counts them)

  tokend auto, HTTP summarizer (W-token window)
                    the same, with a model summarizer on 127.0.0.1 whose window is W tokens
                    (declared in a temporary user config): the head is summarized in parts
                    (aider's recursion, depth 3 at most). The server answers the four
                    sections; what it received is counted here (requests, parts and merges,
                    the largest request with tiktoken's o200k_base + its maxTokens).

Then bench/append_race.py: 1,000 appends from two clients racing an automatic compaction on a
real daemon (none lost, none duplicated, order kept).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.assembling import AssembleInput, assemble_context

from bench import append_race
from bench.service_shape import models, sessions
from tokend.adapters.tokenizers import load_encoding
from tokend.commands.importer import import_events
from tokend.core.assembly.wire_formats import render_message
from tokend.core.transcripts.events import TranscriptMessage, parse_transcript
from tokend.core.types import TextPart
from tokend.service.compaction.tiers import compact

SESSIONS_DIR = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "claude-code-sessions"
)
BIG = "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SESSIONS = (BIG, "tool_heavy.jsonl", "short.jsonl")
FILE_TOOLS = {"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"}
ERROR_WORDS = re.compile(r"error|fatal|exception|failed|failure", re.IGNORECASE)
EXIT_LINE = re.compile(r"^Exit code \d+$")
REJECTED = "The user doesn't want to proceed"
INJECTED = ("<", "[Request interrupted", "Caveat:", "This session is being continued")
KEEP_NEWEST = 0.30
SUMMARIZER_WINDOWS = (8_000, 32_000)  # tokens: the HTTP summarizer's window, one run each
NARRATIVE = (
    "## Objective\nFinish the task the user set.\n## Decisions\nAs agreed in the session.\n"
    "## Work state\nIn progress.\n## Next step\nContinue with the last request.\n"
)


@dataclass
class Probes:
    user_words: list[str]
    files: list[str]
    errors: list[str]
    last_call: str | None
    cwd: str | None = None


def probes(records: Sequence[dict[str, Any]]) -> Probes:
    """What a compaction must keep, read from the raw records."""
    words: list[str] = []
    files: list[str] = []
    errors: list[str] = []
    last_call = None
    for record in records:
        if record.get("isSidechain") or record.get("type") not in ("user", "assistant"):
            continue
        content = (record.get("message") or {}).get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and record["type"] == "user" and not record.get("isMeta"):
                said = block["text"]
                if said.strip() and not said.startswith(INJECTED):
                    words.append(said)
            elif kind == "tool_use":
                value = block.get("input") or {}
                if block.get("name") in FILE_TOOLS:
                    path = value.get("file_path") or value.get("notebook_path")
                    if path:
                        files.append(path)
                last_call = value.get("command") or value.get("file_path") or last_call
            elif kind == "tool_result" and block.get("is_error"):
                errors.extend(_error_lines(block.get("content")))
    cwd = next((r["cwd"] for r in records if isinstance(r.get("cwd"), str)), None)
    return Probes(_unique(words), _unique(files), _unique(errors), last_call, cwd)


def _error_lines(content: Any) -> list[str]:
    text = (
        content
        if isinstance(content, str)
        else "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict))
    )
    if text.startswith(REJECTED):
        return []
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line for line in lines if not EXIT_LINE.match(line)]
    found = [line for line in lines if ERROR_WORDS.search(line)] or lines[:1]
    return [line[:300] for line in found]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def context_text(messages: Iterable[Any], system: Iterable[Any] = ()) -> str:
    """Every string a request carries (texts, tool inputs, tool results, system blocks)."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(list(messages))
    walk(list(system))
    return "\n".join(out)


@dataclass
class Row:
    session: str
    method: str
    before: int
    after: int
    text: str


def share(found: Sequence[str], text: str, cwd: str | None = None) -> str:
    """How many of `found` the text holds; a path also counts when written relative to the
    session's working directory (a summary may shorten it so)."""
    if not found:
        return "n/a (0)"
    prefix = (cwd or "").rstrip("/") + "/"
    kept = sum(
        1
        for item in found
        if item in text or (cwd and item.startswith(prefix) and item[len(prefix) :] in text)
    )
    return f"{kept / len(found):.0%} ({kept}/{len(found)})"


def open_sqlite(path: Path) -> Any:
    """The sessions on a SQLite file, on this tree or on a baseline tree from before the
    composition root (issue 18), for bench.compaction_record's comparison."""
    try:
        from tokend.service.app import open_service
    except ImportError:
        from tokend.service.factory import build_service as open_service  # type: ignore
    return open_service(None, f"sqlite:///{path}")


def _import(records_text: str, folder: Path, name: str) -> tuple[Any, str]:
    source = folder / f"{name}.jsonl"
    source.write_text(records_text)
    service = open_sqlite(folder / f"{name}.sqlite3")
    outcome = import_events(service, source, context_window=200_000)
    return service, outcome.session_id


def _assembled(service: Any, sid: str) -> tuple[int, str]:
    assembly = assemble_context(service, sid, AssembleInput(format="anthropic"))
    return assembly.total_tokens, context_text(assembly.messages, assembly.system or ())


@dataclass
class SummarizerServer:
    """An OpenAI-shaped /chat/completions on 127.0.0.1 answering the four sections; every
    request body is kept."""

    bodies: list[dict[str, Any]] = field(default_factory=list)

    @contextmanager
    def running(self) -> Iterator[str]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                answer = {"choices": [{"message": {"content": NARRATIVE}, "finish_reason": "stop"}]}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()


@contextmanager
def http_summarizer(folder: Path, window: int) -> Iterator[SummarizerServer]:
    """A user config (in `folder`) whose [summarizer] chain asks the server first, its model
    declared with a `window`-token window."""
    server = SummarizerServer()
    with server.running() as base_url:
        config = folder / f"config-{window}" / "tokend"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(
            f'[summarizer]\nchain = ["openai", "extractive"]\nopenai_base_url = "{base_url}"\n'
            f'openai_model = "bench-summarizer"\n[models."bench-summarizer"]\n'
            f"context_window = {window}\nmax_output_tokens = 1000\n"
        )
        saved = os.environ.get("XDG_CONFIG_HOME")
        os.environ["XDG_CONFIG_HOME"] = str(config.parent)
        try:
            yield server
        finally:
            if saved is None:
                os.environ.pop("XDG_CONFIG_HOME", None)
            else:
                os.environ["XDG_CONFIG_HOME"] = saved


def recursion_row(window: int, bodies: Sequence[dict[str, Any]], detail: str) -> str:
    """One line of the recursion table, from what the server received."""
    encoding = load_encoding("o200k_base")
    prompts = [b["messages"][0]["content"] for b in bodies]
    sizes = [
        len(encoding.encode_ordinary(p)) + b["max_tokens"]
        for p, b in zip(prompts, bodies, strict=True)
    ]
    merges = sum(1 for p in prompts if "# Part 1 of 2" in p)
    extractive = re.search(r"(\d+) part\(s\) summarized extractively", detail)
    depth = re.search(r"split to depth (\d+)", detail)
    largest = max(sizes, default=0)
    return (
        f"| {window:,} | {len(bodies)} | {len(bodies) - merges} / {merges} | "
        f"{depth.group(1) if depth else 0} | {extractive.group(1) if extractive else 0} | "
        f"{largest:,} ({largest / window:.0%}) | {max(map(len, prompts), default=0):,} |"
    )


def measure(name: str, folder: Path) -> tuple[Probes, list[Row], list[str]]:
    lines = [line for line in (SESSIONS_DIR / name).read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    cut = next(
        (i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary"), len(records)
    )
    head = "\n".join(lines[:cut]) + "\n"
    found = probes(records[:cut])
    rows: list[Row] = []
    notes: list[str] = []
    ours = "auto" if name == BIG else "full"
    for method, strategy in ((f"tokend {ours}", ours), ("prune only", "prune")):
        service, sid = _import(head, folder, f"{name}-{strategy}")
        before, _ = _assembled(service, sid)
        outcome = compact(service, sid, strategy)
        after, text = _assembled(service, sid)
        rows.append(Row(name, method, before, after, text))
        notes += [f"{name} {method}: {a.kind}: {a.detail}" for a in outcome.actions]
        service.close()
    if name == BIG:
        for window in SUMMARIZER_WINDOWS:
            with http_summarizer(folder, window) as server:
                service, sid = _import(head, folder, f"{name}-http-{window}")
                before, _ = _assembled(service, sid)
                outcome = compact(service, sid, "auto")
                after, text = _assembled(service, sid)
                service.close()
            method = f"tokend auto, HTTP summarizer ({window:,}-token window)"
            rows.append(Row(name, method, before, after, text))
            notes += [f"{name} {method}: {a.kind}: {a.detail}" for a in outcome.actions]
            detail = " ".join(a.detail for a in outcome.actions)
            RECURSION.append(recursion_row(window, server.bodies, detail))
    service, sid = _import(head, folder, f"{name}-newest")
    data = sessions(service).state(sid).data
    total = sum(data.message_tokens.values())
    kept, size = [], 0
    for message in reversed(data.messages):
        size += data.message_tokens[message.id]
        if size > KEEP_NEWEST * total:
            break
        kept.append(message)
    before, _ = _assembled(service, sid)
    wires = [w for m in reversed(kept) for w in render_message(m, "anthropic")]
    rows.append(
        Row(name, "newest 30%", before, size - data.message_tokens[message.id], context_text(wires))
    )
    if cut < len(records):  # Claude Code's own summary of the same history
        after_boundary = parse_transcript(lines[cut : cut + 5])
        summary = next(
            e for e in after_boundary if isinstance(e, TranscriptMessage) and e.compact_summary
        )
        said = "\n".join(p.text for p in summary.parts if isinstance(p, TextPart))
        tokens = models(service).counter(data.model).count_text(said)
        rows.append(Row(name, "Claude Code", before, tokens, said))
    service.close()
    return found, rows, notes


RECURSION: list[str] = []  # rows of the recursion table, filled by measure()


def run() -> str:
    RECURSION.clear()
    out = [
        "### Compaction: what survives (real Claude Code sessions)\n",
        "Each method compacts the same history; the probes' oracles are read from the raw "
        "JSONL (see bench/compaction.py). `size` is the context's tokens after / before as the "
        "gauge counts them (Claude has no local tokenizer: calibrated estimates).\n",
        "| session | method | user words verbatim | files touched present | exact errors present "
        "| last call present | size after / before |",
        "|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SESSIONS:
            found, rows, said = measure(name, Path(tmp))
            notes += said
            short = name if name != BIG else "258c7280 (big, cut at its compaction)"
            for row in rows:
                last = (
                    "n/a"
                    if not found.last_call
                    else ("yes" if found.last_call in row.text else "no")
                )
                out.append(
                    f"| {short} | {row.method} | {share(found.user_words, row.text)} | "
                    f"{share(found.files, row.text, found.cwd)} | {share(found.errors, row.text)} | {last} | "
                    f"{row.after:,} / {row.before:,} ({row.after / row.before:.1%}) |"
                )
    out += [
        "\nAider's recursion on the big session (tokend auto with the HTTP summarizer): the "
        "summarizer's window; the requests it received (parts asked / merges); the deepest "
        "split; parts given the extractive summary (still over the window at depth 3); the "
        "largest request (o200k_base tokens of its prompt + its maxTokens, counted here) "
        "against the window; the largest prompt in characters (tokend's own cap: 120,000).\n",
        "| window (tokens) | summarizer calls | parts / merges | depth | extractive parts "
        "| largest request (of window) | largest prompt (chars) |",
        "|---|---|---|---|---|---|---|",
        *RECURSION,
    ]
    out.append("\nWhat each tokend compaction did:\n")
    out += [f"- {note}" for note in notes]
    return "\n".join(out) + "\n\n" + append_race.figure()


if __name__ == "__main__":
    print(run())
