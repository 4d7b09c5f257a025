"""SqlStore behaviour on a real SQLite file: what the service and the user rely on."""

from __future__ import annotations

import threading
from datetime import UTC, timedelta, timezone

import pytest
from sqlalchemy import func, select

from tokend.adapters.store import SqlStore
from tokend.adapters.store.models import MessageRow, PartRow
from tokend.core.commit import Compacted, SessionCommit, SessionFields
from tokend.core.errors import SessionNotFound, StoreError
from tokend.core.types import (
    AnchorDelta,
    ChatFile,
    CompactionPart,
    EstimateError,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SessionFigures,
    SessionGauge,
    StoredPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

from .conftest import at, message, session_info

EVERY_KIND = (
    TextPart("plain text, ünïcödé, 漢字, emoji 🚀"),
    ReasoningPart("thinking", {"anthropic": {"signature": "c2ln", "nested": [1, 2.5, None]}}),
    ReasoningPart("no metadata"),
    ToolCallPart("call_1", "read_file", {"path": "a.py", "lines": [1, 20], "opts": None}),
    ToolCallPart("call_2", "noop", None),
    ToolCallPart("call_3", "list", [1, "two", {"three": 3.0}, True]),
    ToolCallPart("call_4", "echo", "just a string"),
    ToolCallPart("call_5", "echo", {"half an emoji": "\ud83d", "n": -1.5e300}),
    ToolResultPart("call_1", "read_file", "print('hi')\n", is_error=False),
    ToolResultPart("call_2", "noop", "boom", is_error=True),
    ImagePart("image/png", "iVBORw0KGgo="),
    ImagePart("image/jpeg"),
    FilePart("src/app.py"),
    CompactionPart("Summary of the earlier conversation."),
)


def count_rows(store: SqlStore, model: type) -> int:
    with store.engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(model)).scalar_one()


def test_every_part_kind_round_trips_unchanged(store: SqlStore):
    store.create_session(session_info("s1"))
    sent = Message(
        id="m1",
        session_id="s1",
        role="assistant",
        parts=tuple(StoredPart(f"p{i}", part, tokens=i) for i, part in enumerate(EVERY_KIND)),
        created_at=at(1),
        model="claude-sonnet-4",
        usage=Usage(100, 20, reasoning_tokens=5, cache_read_tokens=7, cache_write_tokens=9),
        cost_usd=0.0123,
        completed_at=at(2),
    )
    store.append_message(sent)
    assert store.messages.load_all_messages("s1") == [sent]


def test_timestamps_come_back_aware_utc_at_the_same_instant(store: SqlStore):
    plus_two = timezone(timedelta(hours=2))
    created = at(0).astimezone(plus_two)
    store.create_session(session_info("s1", created_at=created, updated_at=created))
    loaded = store.get_session("s1")
    assert loaded is not None
    assert loaded.created_at == created
    assert loaded.created_at.tzinfo == UTC


def test_a_naive_timestamp_is_refused_and_nothing_is_written(store: SqlStore):
    naive = at(0).replace(tzinfo=None)
    with pytest.raises(StoreError, match="naive"):
        store.create_session(session_info("s1", created_at=naive))
    assert store.get_session("s1") is None


def test_append_is_all_or_nothing(store: SqlStore):
    store.create_session(session_info("s1"))
    kept = message("s1")
    store.append_message(kept)
    before = store.get_session("s1")
    # The second part reuses the first part's id: the insert fails midway through the parts.
    broken = Message(
        id="m-broken",
        session_id="s1",
        role="user",
        parts=(StoredPart("dup", TextPart("a")), StoredPart("dup", TextPart("b"))),
        created_at=at(1000),
    )
    with pytest.raises(StoreError, match="(?i)unique") as failure:
        store.append_message(broken)
    assert "INSERT" not in failure.value.message  # the driver's reason, not the statement
    assert store.messages.load_all_messages("s1") == [kept]
    assert count_rows(store, MessageRow) == 1 and count_rows(store, PartRow) == 1
    assert store.get_session("s1") == before  # updated_at not bumped
    fixed = Message(
        id="m-broken",
        session_id="s1",
        role="user",
        parts=(StoredPart("dup", TextPart("a")),),
        created_at=at(1000),
    )
    store.append_message(fixed)  # the id was never taken
    assert store.messages.load_all_messages("s1") == [kept, fixed]


def test_append_to_an_unknown_or_deleted_session_raises_session_not_found(store: SqlStore):
    with pytest.raises(SessionNotFound):
        store.append_message(message("nope"))
    store.create_session(session_info("s1"))
    store.commit_change("s1", SessionCommit(fields=SessionFields(deleted_at=at(5))))
    with pytest.raises(SessionNotFound):
        store.append_message(message("s1"))
    assert count_rows(store, MessageRow) == 0


def test_messages_keep_append_order_even_with_earlier_timestamps(store: SqlStore):
    store.create_session(session_info("s1"))
    sent = [message("s1", created_at=at(100 - i)) for i in range(5)]
    for m in sent:
        store.append_message(m)
    assert [m.id for m in store.messages.load_all_messages("s1")] == [m.id for m in sent]


def test_append_moves_updated_at_forward_only(store: SqlStore):
    store.create_session(session_info("s1", updated_at=at(50)))
    store.append_message(message("s1", created_at=at(10)))
    assert store.get_session("s1").updated_at == at(50)  # type: ignore[union-attr]
    store.append_message(message("s1", created_at=at(60)))
    assert store.get_session("s1").updated_at == at(60)  # type: ignore[union-attr]


def test_the_live_context_is_the_summary_then_what_no_summary_covers(store: SqlStore):
    store.create_session(session_info("s1"))
    store.create_session(session_info("other"))
    head = [message("s1") for _ in range(3)]
    tail = [message("s1") for _ in range(2)]
    for m in (*head, *tail):
        store.append_message(m)
    first = message("s1", CompactionPart("first"), role="system", summary=True)
    covered = Compacted(tuple(m.id for m in head), first.id, at(100))
    store.commit_change("s1", SessionCommit(message=first, compacted=(covered,)))
    later = message("s1")  # appended after the summary: it follows the kept tail
    store.append_message(later)
    store.append_message(message("other", summary=True))  # another session's boundary
    assert [m.id for m in store.messages.load_messages("s1")] == [
        first.id,
        *(m.id for m in tail),
        later.id,
    ]
    # A second summary covers the first and part of the tail.
    second = message("s1", CompactionPart("second"), role="system", summary=True)
    covered = Compacted((first.id, tail[0].id), second.id, at(200))
    store.commit_change("s1", SessionCommit(message=second, compacted=(covered,)))
    assert [m.id for m in store.messages.load_messages("s1")] == [second.id, tail[1].id, later.id]
    # Nothing is deleted; what left the live context says when and by what.
    every = {m.id: m for m in store.messages.load_all_messages("s1")}
    assert len(every) == 8
    assert {every[m.id].compacted_by for m in head} == {first.id}
    assert every[first.id].compacted_by == every[tail[0].id].compacted_by == second.id
    assert every[tail[0].id].compacted_at == at(200)
    assert every[later.id].compacted_at is None


def test_a_gated_tool_output_is_read_back_in_slices_by_its_own_session_only(store: SqlStore):
    store.create_session(session_info("s1"))
    store.create_session(session_info("s2"))
    text = "ünï" * 40_000 + "THE END"
    for _ in range(2):  # kept once
        kept = SessionCommit(message=message("s1"), tool_outputs={"sha256:abc": text})
        store.commit_change("s1", kept)
    assert store.messages.read_tool_output("s1", "sha256:abc", 0, 5) == (text[:5], len(text))
    assert store.messages.read_tool_output("s1", "sha256:abc", len(text) - 7, 100) == (
        "THE END",
        len(text),
    )
    assert store.messages.read_tool_output("s1", "sha256:abc", len(text) + 5, 10) == ("", len(text))
    assert store.messages.read_tool_output("s2", "sha256:abc", 0, 5) is None
    assert store.messages.read_tool_output("s1", "sha256:nope", 0, 5) is None


def test_without_a_summary_load_messages_returns_everything(store: SqlStore):
    store.create_session(session_info("s1"))
    sent = [message("s1") for _ in range(4)]
    for m in sent:
        store.append_message(m)
    assert store.messages.load_messages("s1") == sent
    store.create_session(session_info("empty"))
    assert store.messages.load_messages("empty") == []


def test_soft_delete_hides_a_session_but_keeps_its_history(store: SqlStore):
    store.create_session(session_info("s1"))
    sent = message("s1")
    store.append_message(sent)
    store.commit_change("s1", SessionCommit(fields=SessionFields(deleted_at=at(9))))
    assert store.get_session("s1") is None
    assert store.listings.listed() == []
    with pytest.raises(SessionNotFound):
        store.messages.load_messages("s1")
    assert count_rows(store, MessageRow) == 1
    store.commit_change("s1", SessionCommit(fields=SessionFields(restored=True)))
    assert store.messages.load_messages("s1") == [sent]


def test_list_sessions_filters_by_workspace_newest_first(store: SqlStore):
    store.create_session(session_info("a", workspace_uri="file:///w1", updated_at=at(1)))
    store.create_session(session_info("b", workspace_uri="file:///w1", updated_at=at(2)))
    store.create_session(session_info("c", workspace_uri="file:///w2", updated_at=at(3)))
    assert [s.id for s in store.listings.listed()] == ["c", "b", "a"]
    assert [s.id for s in store.listings.listed("file:///w1")] == ["b", "a"]
    store.append_message(message("a", created_at=at(10)))
    assert [s.id for s in store.listings.listed("file:///w1")] == ["a", "b"]


def test_a_commit_sets_the_columns_its_fields_name_and_leaves_the_others(store: SqlStore):
    store.create_session(session_info("s1", title="first", extra={"pinned": True}))
    figures = SessionFigures(
        compactions=2,
        rewinds=1,
        measured={"system": 120},
        measured_exact=False,
        errors=(EstimateError(110, 100),),
        anchor_delta=AnchorDelta("m1", -40),
        gauge=SessionGauge(1_234, 0.96, 128_000, False, 7, "gpt-4o"),
    )
    files = (ChatFile("src/a.py", False), ChatFile("README.md", True))
    fields = SessionFields(figures=figures, title="Fix the parser", chat_files=files)
    store.commit_change("s1", SessionCommit(fields=fields))
    assert store.get_session("s1") == session_info(
        "s1", title="Fix the parser", extra={"pinned": True}, figures=figures, chat_files=files
    )
    with pytest.raises(SessionNotFound):
        store.commit_change("nope", SessionCommit(fields=SessionFields(title="x")))


def test_create_session_with_an_unknown_parent_raises(store: SqlStore):
    with pytest.raises(SessionNotFound, match="parent"):
        store.create_session(session_info("s1", parent_id="missing"))
    assert store.listings.listed() == []


def test_compaction_marks_and_token_counts_survive_reopen(db_url: str):
    sent = message("s1", TextPart("a"), ToolResultPart("c", "grep", "lots of output"))
    first, second = (p.id for p in sent.parts)
    with SqlStore.open(db_url) as store:
        store.create_session(session_info("s1"))
        store.append_message(sent)
        store.parts.mark_parts_compacted([second, "unknown-id"], at(20))
        store.parts.mark_parts_compacted([second], at(30))  # the first prune time stays
        store.parts.set_part_tokens({first: 1, second: 4, "unknown-id": 9})
    with SqlStore.open(db_url) as store:
        (loaded,) = store.messages.load_all_messages("s1")
    assert [(p.tokens, p.compacted_at) for p in loaded.parts] == [(1, None), (4, at(20))]
    assert [p.part for p in loaded.parts] == [p.part for p in sent.parts]  # marked, not removed


def test_token_cache_persists_and_overwrites(db_url: str):
    many = {f"o200k_base:{i:064x}": i for i in range(1_200)}  # more than one IN (...) chunk
    with SqlStore.open(db_url) as store:
        assert store.count_cache.get_many(list(many)) == {}
        store.count_cache.put_many(many)
        store.count_cache.put_many({"o200k_base:" + "0" * 64: 42})
    with SqlStore.open(db_url) as store:
        assert store.count_cache.get_many([*many, "missing"]) == {
            **many,
            "o200k_base:" + "0" * 64: 42,
        }


def test_calibration_persists_across_reopen(db_url: str):
    state = {"o200k_base": {"prose": 0.98, "code": [1.1, 12]}, "version": 1}
    with SqlStore.open(db_url) as store:
        assert store.calibration.load_calibration() == {}
        store.calibration.save_calibration({"old": True})
        store.calibration.save_calibration(state)
    with SqlStore.open(db_url) as store:
        assert store.calibration.load_calibration() == state


def test_two_stores_on_one_file_see_each_others_writes(db_url: str):
    with SqlStore.open(db_url) as first, SqlStore.open(db_url) as second:
        first.create_session(session_info("s1"))
        assert second.get_session("s1") is not None
        sent = message("s1")
        second.append_message(sent)
        assert first.messages.load_messages("s1") == [sent]
        second.count_cache.put_many({"k": 3})
        assert first.count_cache.get_many(["k"]) == {"k": 3}


def test_threads_appending_to_one_session_lose_nothing(store: SqlStore):
    store.create_session(session_info("s1"))
    per_thread = 25
    sent: list[list[Message]] = [[message("s1") for _ in range(per_thread)] for _ in range(4)]

    def append_all(batch: list[Message]) -> None:
        for m in batch:
            store.append_message(m)

    threads = [threading.Thread(target=append_all, args=(batch,)) for batch in sent]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    loaded_ids = [m.id for m in store.messages.load_all_messages("s1")]
    assert sorted(loaded_ids) == sorted(m.id for batch in sent for m in batch)
    for batch in sent:  # each thread's messages stay in the order it appended them
        assert [i for i in loaded_ids if i in {m.id for m in batch}] == [m.id for m in batch]
