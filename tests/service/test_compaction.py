"""Compaction on a real SQLite file: the summarize and full tiers, what the store keeps, what
assembly sends, appends racing a summary, and compaction.auto. Oracles: the store's rows (read
with sqlite3), tiktoken's counts, and the texts this test wrote."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tokend.adapters.tokenizers import load_encoding
from tokend.core.counting.render import SUMMARY_HEADER
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service
from tokend.service.compaction import summarizers
from tokend.service.compaction.auto_compaction import append_message
from tokend.service.compaction.tiers import (
    CompactRequest,
    compact,
    compact_async,
)


@pytest.fixture
def db(tmp_path):
    return tmp_path / "compaction.sqlite3"


def _chat(service, sid, turns, words=300, start=0):
    """A conversation without a single tool call; returns what the user typed."""
    typed = []
    for i in range(start, start + turns):
        said = f"request {i}: please rename the helper in module {i} " + "and keep it tidy " * words
        typed.append(said)
        append(service, sid, "user", [TextPart(said)])
        append(service, sid, "assistant", [TextPart(f"done {i}. " + "explanation " * words * 4)])
    return typed


def _rows(db, sql, *args):
    with sqlite3.connect(db) as connection:
        return connection.execute(sql, args).fetchall()


def test_a_chat_only_session_over_the_threshold_compacts(db):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    typed = _chat(service, sid, 48)
    before = service.sessions.snapshot(sid)
    assert before.used_tokens >= before.autocompact_threshold  # the old dead end
    outcome = compact(service, sid, "auto")
    kinds = [a.kind for a in outcome.actions]
    assert kinds == ["skip", "summarize"]  # nothing to prune: the summary tier acts
    after = service.sessions.snapshot(sid)
    assert after.used_tokens < after.autocompact_threshold and after.compactions == 1
    assert outcome.actions[1].tokens_freed == before.used_tokens - after.used_tokens
    # Nothing deleted: every message is in the store; the summarized ones are marked.
    summary_id = outcome.actions[1].message_id
    marked = _rows(db, "SELECT count(*) FROM messages WHERE compacted_by = ?", summary_id)[0][0]
    live = _rows(db, "SELECT count(*) FROM messages WHERE compacted_at IS NULL")[0][0]
    assert marked == outcome.actions[1].parts and marked + live == 96 + 1
    # The request: the summary is a system message, marked, never the user's.
    assembled = assemble_context(service, sid, AssembleInput(format="openai"))
    first = assembled.messages[0]
    assert first["role"] == "system" and first["content"].startswith(SUMMARY_HEADER)
    users = " ".join(str(m["content"]) for m in assembled.messages if m["role"] == "user")
    assert SUMMARY_HEADER not in users
    anthropic = assemble_context(service, sid, AssembleInput(format="anthropic"))
    assert anthropic.system is not None and anthropic.system[-1]["text"].startswith(SUMMARY_HEADER)
    assert anthropic.messages[0]["role"] == "user"
    # The user's words survive verbatim: the newest ones, as many as the 13,952-token budget
    # (the input limit / 8, under 20,000) holds, by tiktoken's count; the tail keeps the rest.
    enc = load_encoding("o200k_base")
    summary = first["content"]
    in_summary = [t for t in typed if t in summary]
    in_tail = [t for t in typed if t in users]
    kept = in_summary + in_tail
    assert kept == typed[len(typed) - len(kept) :] and not set(in_summary) & set(in_tail)
    cost = [len(enc.encode(t)) + 1 for t in in_summary]
    older = typed[len(typed) - len(kept) - 1]
    assert sum(cost) <= 13_952 < sum(cost) + len(enc.encode(older)) + 1
    # The gauge counts what is sent: tiktoken's count of the assembled request.
    contents = sum(len(enc.encode(m["content"])) for m in assembled.messages)
    assert assembled.total_tokens == contents + 3 * len(assembled.messages) + 3
    service.close()

    reopened = open_service(None, f"sqlite:///{db}")
    again = reopened.sessions.snapshot(sid)
    assert (again.used_tokens, again.version) == (after.used_tokens, after.version)
    assert [m.id for m in reopened.sessions.state(sid).data.messages][0] == summary_id
    reopened.close()


def test_a_second_compaction_merges_the_first_summary(db):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    first_words = _chat(service, sid, 30, words=100)
    append(service, sid, "assistant", [ToolCallPart("c1", "Edit", {"file_path": "src/early.py"})])
    append(
        service,
        sid,
        "tool",
        [ToolResultPart("c1", "Edit", "The file src/early.py has been updated.")],
    )
    compact(service, sid, "summarize")
    _chat(service, sid, 30, words=100, start=100)
    outcome = compact(service, sid, "summarize")
    action = outcome.actions[0]
    assert action.kind == "summarize" and "previous summary merged" in action.detail
    summary = service.sessions.state(sid).data.messages[0].parts[0].part.summary
    assert "src/early.py: edited" in summary  # the artifact index outlives the first summary
    assert first_words[0][:60] in summary  # the first request stays the objective
    assert summary.count(SUMMARY_HEADER) == 0  # the old summary was merged, not quoted
    service.close()


def test_a_compaction_that_frees_under_5_percent_is_refused_and_writes_nothing(db):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    append(service, sid, "user", [TextPart("hi")])
    append(service, sid, "assistant", [TextPart("hello")])
    append(service, sid, "user", [TextPart("the long one " * 3000)])
    version = service.sessions.snapshot(sid).version
    outcome = compact(service, sid, "summarize")
    assert [a.kind for a in outcome.actions] == ["skip"]
    assert "under the 5% minimum" in outcome.actions[0].detail
    assert service.sessions.snapshot(sid).version == version
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 3
    service.close()


def test_appends_made_while_a_summary_is_written_come_after_it(db, monkeypatch):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    _chat(service, sid, 40)
    writing, appended = threading.Event(), threading.Event()
    real = summarizers.write_summary

    def slow_summary(*args, **kwargs):
        writing.set()
        assert appended.wait(30)  # the summary is being written while others append
        return real(*args, **kwargs)

    monkeypatch.setattr("tokend.service.compaction.summary_tier.write_summary", slow_summary)

    async def race():
        task = asyncio.create_task(compact_async(service, sid, CompactRequest("summarize")))
        while not writing.is_set():
            await asyncio.sleep(0.01)
        late = []
        for i in range(20):
            outcome = await append_message(
                service,
                sid,
                "user",
                [TextPart(f"late {i}")],
                usage=None,
                model=None,
                if_version=None,
            )
            late.append(outcome.message_id)
        appended.set()
        return late, await task

    late, outcome = asyncio.run(race())
    assert outcome.actions[0].kind == "summarize"
    live = [m.id for m in service.sessions.state(sid).data.messages]
    assert live[-20:] == late  # all of them, once, in order, after the summary and its tail
    stored = _rows(db, "SELECT id FROM messages WHERE compacted_at IS NULL ORDER BY seq")
    assert [r[0] for r in stored][-21:-1] == late and len(set(live)) == len(live)
    service.close()
    reopened = open_service(None, f"sqlite:///{db}")
    assert [m.id for m in reopened.sessions.state(sid).data.messages] == live
    reopened.close()


def test_compaction_auto_false_is_honoured_and_a_manual_compaction_still_runs(db, isolated_dirs):
    config = isolated_dirs / "xdg_config_home" / "tokend"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("[compaction]\nauto = false\n")
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    _chat(service, sid, 46)
    assert (
        service.sessions.snapshot(sid).used_tokens
        < service.sessions.snapshot(sid).autocompact_threshold
    )

    async def append_over():
        said = [TextPart("one more thing " * 300)]
        return await append_message(
            service, sid, "user", said, usage=None, model=None, if_version=None
        )

    outcome = asyncio.run(append_over())
    assert outcome.auto is None and outcome.snapshot.compactions == 0
    assert outcome.snapshot.used_tokens >= outcome.snapshot.autocompact_threshold
    assert compact(service, sid, "auto").actions[-1].kind == "summarize"
    service.close()


def test_compaction_auto_fires_on_append_at_the_threshold(db):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    _chat(service, sid, 46)
    assert (
        service.sessions.snapshot(sid).used_tokens
        < service.sessions.snapshot(sid).autocompact_threshold
    )

    async def append_over():
        said = [TextPart("one more thing " * 300)]
        return await append_message(
            service, sid, "user", said, usage=None, model=None, if_version=None
        )

    outcome = asyncio.run(append_over())
    assert outcome.auto is not None and outcome.snapshot.compactions == 1
    assert outcome.snapshot.used_tokens < outcome.snapshot.autocompact_threshold
    assert service.sessions.state(sid).data.messages[-1].id == outcome.message_id
    service.close()


def test_full_keeps_only_the_turn_in_progress(db):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    _chat(service, sid, 10)
    append(service, sid, "user", [TextPart("now run the tests")])
    append(service, sid, "assistant", [ToolCallPart("t1", "Bash", {"command": "pytest -q"})])
    append(
        service,
        sid,
        "tool",
        [ToolResultPart("t1", "Bash", "Exit code 1\nE   AssertionError: 2 != 3", True)],
    )
    outcome = compact(service, sid, "full")
    assert outcome.actions[0].kind == "full"
    live = service.sessions.state(sid).data.messages
    assert len(live) == 3 and live[0].summary  # the summary, the call and its result
    summary = live[0].parts[0].part.summary
    assert "`pytest -q` → exit 1" not in summary  # the call is kept verbatim, not summarized
    assert "now run the tests" in summary
    service.close()


def test_a_usage_anchored_gauge_is_recounted_after_a_summary(db):
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    _chat(service, sid, 20)
    append(service, sid, "assistant", [TextPart("ok")], usage=Usage(100_000, 10))
    assert not service.sessions.snapshot(sid).estimated
    compact(service, sid, "summarize")
    after = service.sessions.snapshot(sid)
    assert after.estimated and after.totals.calls == 1  # lifetime totals keep the call
    service.close()
