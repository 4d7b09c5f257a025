"""`tokend import` and the follower import the same transcript to the same session figures.

Each shared Claude Code transcript, whole and spoiled (a record cut in half in the middle, the
file truncated inside a record, an assistant record written twice, a `[1m]` model), is imported
with the real `tokend import claude-code` command and followed by the follower the daemon runs
(service.transcripts.tail over the service the daemon builds), fed as Claude Code writes: a few records at a
time. The oracle is the transcript's own records, read with json here: one provider call per
(message.id, requestId) of the non-sidechain assistant records, its output tokens those of the
last record of the group.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.conftest import session_file
from tests.in_process import tokend_cli
from tokend.service.app import open_service
from tokend.service.transcripts.tail import TranscriptTail

NAMES = ["short.jsonl", "tool_heavy.jsonl", "258c7280-ae70-4798-800f-63464d01a85d.jsonl"]


def _lines(name: str) -> list[str]:
    return [line for line in session_file(name).read_text().splitlines() if line.strip()]


def _assistant_index(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if '"type":"assistant"' in line.replace(" ", ""))


def _spoiled(lines: list[str], how: str) -> str:
    """The transcript's text, spoiled `how`."""
    lines = list(lines)
    if how == "cut":  # a record in the middle lost its second half
        middle = len(lines) // 2
        lines[middle] = lines[middle][: len(lines[middle]) // 2]
    elif how == "duplicated":  # an assistant record written twice
        first = _assistant_index(lines)
        lines.insert(first + 1, lines[first])
    elif how == "one-million":  # Claude Code's 1M-token window of the same model
        lines = [line.replace('"model":"claude-opus-4-6"', '"model":"claude-opus-4-6[1m]"')
                 for line in lines]  # fmt: skip
        assert any("[1m]" in line for line in lines)
    text = "".join(line + "\n" for line in lines)
    if how == "truncated":  # the writer died inside a record: no newline after its half
        text = text[: int(len(text) * 0.6)]
        text = text if not text.endswith("\n") else text[:-5]
    return text


def _oracle(text: str) -> tuple[int, int]:
    """(provider calls, their output tokens) from the records json can read."""
    last: dict[tuple[object, object], dict] = {}
    for line in text.split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") != "assistant" or record.get("isSidechain") is True:
            continue
        last[(record["message"].get("id"), record.get("requestId"))] = record
    return len(last), sum(r["message"]["usage"]["output_tokens"] for r in last.values())


def _figures(url: str, session_id: str) -> dict:
    service = open_service(None, url)
    try:
        snapshot = service.sessions.snapshot(session_id)
        return {
            "calls": snapshot.totals.calls,
            "outputTokens": snapshot.totals.output_tokens,
            "costUsd": round(snapshot.cost_total_usd, 6),
            "model": snapshot.model,
            "contextWindow": snapshot.context_window,
            "compactions": snapshot.compactions,
            "roles": [m.role for m in service.sessions.state(session_id).data.messages],
        }
    finally:
        service.close()


def _imported(tmp_path: Path, source: Path) -> tuple[dict, dict]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKEND_")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(home), XDG_DATA_HOME=str(home))
    url = f"sqlite:///{tmp_path}/imported.sqlite3"
    done = tokend_cli(
        "--database-url", url, "import", "claude-code", str(source), "--skip-bad-lines", "--json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    return said, _figures(url, said["sessionId"])


async def _follow(tail: TranscriptTail, path: Path, text: str, step: int) -> None:
    lines = text.splitlines(keepends=True)
    for start in range(0, len(lines), step):
        with path.open("a") as stream:
            stream.write("".join(lines[start : start + step]))
        await tail.sync()
    await tail.sync()  # the agent stopped writing: its last reply is imported too


def _followed(tmp_path: Path, text: str, step: int) -> dict:
    url = f"sqlite:///{tmp_path}/followed.sqlite3"
    service = open_service(None, url)
    path = tmp_path / "followed" / "session.jsonl"
    path.parent.mkdir()
    path.write_text("")
    tail = TranscriptTail(service, "claude-code", path)
    try:
        asyncio.run(_follow(tail, path, text, step))
        assert tail.error is None and tail.session_id is not None
        sid = tail.session_id
    finally:
        service.close()
    return _figures(url, sid)


CASES = [
    *((name, how) for name in NAMES for how in ("whole", "cut", "truncated", "duplicated")),
    ("short.jsonl", "one-million"),  # the [1m] model: checked on the short transcript
]


@pytest.mark.parametrize(("name", "how"), CASES)
def test_import_and_follow_give_the_transcripts_figures(tmp_path, name, how):
    text = _spoiled(_lines(name), how)
    source = tmp_path / "imported" / "session.jsonl"
    source.parent.mkdir()
    source.write_text(text)
    calls, output_tokens = _oracle(text)

    said, imported = _imported(tmp_path, source)
    followed = _followed(tmp_path, text, step=1 if len(text) < 100_000 else 7)

    assert (imported["calls"], imported["outputTokens"]) == (calls, output_tokens)
    assert said["calls"] == calls
    assert imported["costUsd"] > 0
    assert followed == imported
    # a last line without its newline is still being written: left, as the follower leaves it
    finished = text[: text.rfind("\n") + 1]
    cut_lines = sum(1 for line in finished.splitlines() if line and not _is_json(line))
    assert said["skippedLines"] == cut_lines
    assert said["unfinishedLastLine"] == (how == "truncated")
    if how == "one-million":
        assert imported["contextWindow"] > 200_000


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


async def _follow_with_pauses(tail: TranscriptTail, path: Path, lines: list[str]) -> None:
    """The agent pauses after every few records (a model thinking for more than the follower's
    quiet time), so replies are imported before they end and grow afterwards."""
    for start in range(0, len(lines), 7):
        with path.open("a") as stream:
            stream.write("".join(line + "\n" for line in lines[start : start + 7]))
        await tail.sync()


def test_a_reply_imported_before_it_ended_keeps_its_tool_calls_and_results(tmp_path):
    """A block that reaches a reply after its tool results were imported is still appended
    before the results that answer it (main refused those results: no toolCall made them)."""
    lines = _lines(NAMES[2])
    calls: set[str] = set()
    results: set[str] = set()
    for line in lines:
        record = json.loads(line)
        if record.get("isSidechain") is True or record.get("type") not in ("user", "assistant"):
            continue
        content = record["message"].get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use":
                calls.add(block["id"])
            elif block.get("type") == "tool_result":
                results.add(block["tool_use_id"])
    service = open_service(None, f"sqlite:///{tmp_path}/followed.sqlite3")
    path = tmp_path / "session.jsonl"
    path.write_text("")
    tail = TranscriptTail(service, "claude-code", path)
    try:
        asyncio.run(_follow_with_pauses(tail, path, lines))
        assert tail.error is None and tail.session_id is not None
        assert tail.importer.refused == 0
        stored = [
            p for m in service.store.messages.load_all_messages(tail.session_id) for p in m.parts
        ]
    finally:
        service.close()
    kinds = [(type(sp.part).__name__, getattr(sp.part, "call_id", None)) for sp in stored]
    assert {c for k, c in kinds if k == "ToolCallPart"} == calls
    assert {c for k, c in kinds if k == "ToolResultPart"} == results
