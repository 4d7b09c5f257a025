"""A transcript followed record by record ends where importing the finished file ends.

The oracle is `tokend import` (commands/importer.py), which reads the finished file at once;
the follower reads a file this test writes one record at a time, as Claude Code does.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.conftest import BIG_SESSION, session_file
from tokend.commands.importer import import_events
from tokend.service.app import open_service
from tokend.service.transcripts.tail import TranscriptTail


def _lines(name: str) -> list[str]:
    path = BIG_SESSION if name == "big" else session_file(name)
    return [line for line in path.read_text().splitlines() if line.strip()]


def _figures(service, session_id: str) -> dict:
    """What following and importing must agree on (not the version: a reply followed while it
    streams grows by changes of its own, each a version)."""
    snapshot = service.sessions.snapshot(session_id)
    messages = service.sessions.state(session_id).data.messages
    return {
        "usedTokens": snapshot.used_tokens,
        "totals": snapshot.totals,
        "costUsd": snapshot.cost_total_usd,
        "compactions": snapshot.compactions,
        "roles": [m.role for m in messages],
    }


def _imported(tmp_path: Path, name: str) -> dict:
    service = open_service(None, f"sqlite:///{tmp_path}/imported.sqlite3")
    source = tmp_path / f"whole-{name}"
    source.write_text("\n".join(_lines(name)) + "\n")
    outcome = import_events(service, source)
    figures = _figures(service, outcome.session_id)
    service.close()
    return figures


async def _follow(tail: TranscriptTail, path: Path, lines: list[str], step: int) -> None:
    for start in range(0, len(lines), step):
        with path.open("a") as stream:
            stream.write("".join(line + "\n" for line in lines[start : start + step]))
        await tail.sync()


@pytest.mark.parametrize(
    ("name", "step"), [("short.jsonl", 1), ("tool_heavy.jsonl", 1), ("big", 5)]
)
def test_following_record_by_record_matches_importing_the_finished_file(tmp_path, name, step):
    lines = _lines(name)
    service = open_service(None, f"sqlite:///{tmp_path}/followed.sqlite3")
    path = tmp_path / "session.jsonl"
    path.write_text("")
    tail = TranscriptTail(service, "claude-code", path)
    asyncio.run(_follow(tail, path, lines, step))
    assert tail.error is None and tail.session_id is not None
    assert _figures(service, tail.session_id) == _imported(tmp_path, name)
    last = service.sessions.snapshot(tail.session_id).last_call
    assert last is not None and _usage(last) == _last_usage(lines)  # the provider's own figures
    service.close()


def _usage(call) -> tuple[int, int, int, int]:
    return (call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_write_tokens)


def _last_usage(lines: list[str]) -> tuple[int, int, int, int]:
    """The usage of the transcript's last provider call, from its last record (json)."""
    usage = [
        json.loads(line)["message"]["usage"]
        for line in lines
        if json.loads(line).get("type") == "assistant"
    ][-1]
    return (
        usage["input_tokens"],
        usage["output_tokens"],
        usage["cache_read_input_tokens"],
        usage["cache_creation_input_tokens"],
    )


def _parts(service, session_id: str) -> list:
    return [
        (m.role, [sp.part for sp in m.parts])
        for m in service.sessions.state(session_id).data.messages
    ]


def test_a_restarted_follower_resumes_and_import_after_it_adds_nothing(tmp_path):
    lines = _lines("tool_heavy.jsonl")
    half = len(lines) // 2
    path = tmp_path / "session.jsonl"
    path.write_text("")
    url = f"sqlite:///{tmp_path}/followed.sqlite3"
    first = open_service(None, url)
    tail = TranscriptTail(first, "claude-code", path)
    asyncio.run(_follow(tail, path, lines[:half], 1))
    session_id = tail.session_id
    assert session_id is not None
    first.close()  # the daemon stops mid-session

    second = open_service(None, url)
    again = TranscriptTail(second, "claude-code", path)
    asyncio.run(_follow(again, path, lines[half:], 1))
    assert again.session_id == session_id  # the same session, found by its cursor

    # the oracle: `tokend import` of the first half, then (another process) of the whole file
    oracle_path = tmp_path / "imported.jsonl"
    oracle_path.write_text("".join(line + "\n" for line in lines[:half]))
    oracle_url = f"sqlite:///{tmp_path}/imported.sqlite3"
    before = open_service(None, oracle_url)
    oracle_id = import_events(before, oracle_path).session_id
    before.close()
    oracle_path.write_text("".join(line + "\n" for line in lines))
    after = open_service(None, oracle_url)
    import_events(after, oracle_path)
    assert _parts(second, session_id) == _parts(after, oracle_id)  # every record once, in order
    assert _figures(second, session_id) == _figures(after, oracle_id)

    outcome = import_events(second, path)  # importing the followed transcript: nothing new
    assert (outcome.session_id, outcome.messages, outcome.created) == (session_id, 0, False)
    second.close()
    after.close()


def test_a_reply_is_imported_as_it_streams_and_grows_into_the_imported_message(tmp_path):
    """A reply is imported at its first block, nothing after it yet; the blocks Claude Code
    writes after that join that message, and its call takes the newest usage: the session ends
    as an import of the finished file, message for message."""
    lines = _lines("short.jsonl")
    records = [json.loads(line) for line in lines]
    reply = [i for i, r in enumerate(records) if r.get("type") == "assistant"]
    cut = reply[1]  # the reply's first block only
    service = open_service(None, f"sqlite:///{tmp_path}/followed.sqlite3")
    path = tmp_path / "session.jsonl"
    path.write_text("")
    tail = TranscriptTail(service, "claude-code", path)

    async def scenario() -> None:
        await _follow(tail, path, lines[: cut + 1], len(lines))
        assert tail.messages == 2  # the prompt, and the reply as far as it was written
        last = service.sessions.snapshot(tail.session_id).last_call
        assert last is not None and _usage(last) == _last_usage(lines[: cut + 1])
        await _follow(tail, path, lines[cut + 1 :], len(lines))

    asyncio.run(scenario())
    assert tail.session_id is not None
    parts = [
        sp.part
        for m in service.sessions.state(tail.session_id).data.messages
        for sp in m.parts
        if m.role == "assistant"
    ]
    imported = open_service(None, f"sqlite:///{tmp_path}/imported.sqlite3")
    outcome = import_events(imported, session_file("short.jsonl"))
    whole = [
        sp.part
        for m in imported.sessions.state(outcome.session_id).data.messages
        for sp in m.parts
        if m.role == "assistant"
    ]
    assert parts == whole  # every block, once, in order
    assert _figures(service, tail.session_id) == _figures(imported, outcome.session_id)
    service.close()
    imported.close()


def test_a_codex_rollout_followed_line_by_line_takes_codex_figures(tmp_path):
    """The oracle is Codex's own token_count: the gauge anchors on its last call (input, cached
    included, plus output less the reasoning OpenAI does not send back)."""
    from tests.unit.test_transcripts_codex_rollout import CALL_2, ROLLOUT

    service = open_service(None, f"sqlite:///{tmp_path}/followed.sqlite3")
    path = tmp_path / "rollout-2025-10-01T10-00-00-0199a.jsonl"
    path.write_text("")
    tail = TranscriptTail(service, "codex", path)
    asyncio.run(_follow(tail, path, [json.dumps(record) for record in ROLLOUT], 1))
    assert tail.error is None and tail.session_id is not None
    snapshot = service.sessions.snapshot(tail.session_id)
    info = service.sessions.state(tail.session_id).data.info
    assert (info.model, info.workspace_uri) == ("gpt-5-codex", "file:///work/app")
    assert snapshot.context_window == 272_000  # Codex's model_context_window
    last = CALL_2["input_tokens"] + CALL_2["output_tokens"] - CALL_2["reasoning_output_tokens"]
    assert snapshot.used_tokens == last and not snapshot.estimated
    assert (snapshot.totals.calls, snapshot.totals.cache_read_tokens) == (2, 4_992)
    assert tail.messages == 5
    service.close()
