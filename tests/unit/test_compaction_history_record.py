"""core.compaction.history_record: what a summary stands for is read from the whole stored history, across
foreign boundaries, earlier summaries, prunes and forks; never from a summary's text."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from itertools import count
from typing import Any

from tokend.core.artifacts import error_strings
from tokend.core.compaction.digest import Digest, digest_to_json
from tokend.core.compaction.history_record import record_digest, record_of
from tokend.core.compaction.summary import render_summary
from tokend.core.types import (
    CompactionPart,
    Message,
    StoredPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_ids = count()


def msg(role: Any, *parts: Any, summary: bool = False, by: str | None = None) -> Message:
    n = next(_ids)
    stored = tuple(StoredPart(f"p{n}.{i}", p, 10) for i, p in enumerate(parts))
    return Message(f"m{n:04d}", "s", role, stored, T0, summary=summary, compacted_by=by)


def said(text: str, by: str | None = None) -> Message:
    return msg("user", TextPart(text), by=by)


def edit(path: str, by: str | None = None) -> list[Message]:
    return [
        msg("assistant", ToolCallPart(path, "Edit", {"file_path": path}), by=by),
        msg("tool", ToolResultPart(path, "Edit", "updated"), by=by),
    ]


def words(texts: Any) -> list[int]:
    return [len(t.split()) for t in texts]


def covered_by(summary: Message, messages: list[Message]) -> list[Message]:
    return [replace(m, compacted_by=summary.id) for m in messages]


def test_a_foreign_boundary_hides_nothing_the_store_holds():
    foreign = msg("system", CompactionPart("The agent's summary: all done."), summary=True)
    before = covered_by(foreign, [said("first request, verbatim"), *edit("src/early.py")])
    after = [said("second request"), *edit("src/late.py")]
    history = [*before, foreign, *after]
    record = record_of(history, [foreign, *after])  # the live context: the boundary first
    digest = record_digest(record)
    assert digest.user_words == ("first request, verbatim", "second request")
    assert [f.path for f in digest.files] == ["src/early.py", "src/late.py"]
    assert digest.foreign == ("The agent's summary: all done.",)
    assert record.earlier == 3
    text = render_summary(digest, words, target_tokens=1_000).text
    assert "first request, verbatim" in text and "The agent's summary: all done." in text


def test_an_earlier_summary_of_ours_is_read_from_its_originals_not_its_digest():
    ours = msg(
        "system",
        CompactionPart("summary", digest_to_json(Digest(user_words=("from the digest",)))),
        summary=True,
    )
    before = covered_by(ours, [said("from the originals")])
    history = [*before, ours, said("newer")]
    digest = record_digest(record_of(history, history[1:]))
    assert digest.user_words == ("from the originals", "newer")
    assert digest.foreign == ()


def test_a_digest_whose_originals_are_elsewhere_is_merged():
    """A handoff child's first message: the parent's digest; its originals are in the parent."""
    first = msg(
        "system",
        CompactionPart("handoff", digest_to_json(Digest(user_words=("the parent's words",)))),
        summary=True,
    )
    history = [first, said("the child's words")]
    digest = record_digest(record_of(history, history))
    assert digest.user_words == ("the parent's words", "the child's words")


def test_rewound_messages_and_the_kept_tail_are_not_in_the_record():
    history = [said("kept"), said("taken back", by="rewind"), said("head end"), said("tail")]
    record = record_of(history, [history[0], history[2]])
    assert [m.id for m in record.messages] == [history[0].id, history[2].id]


def test_a_provider_compaction_is_kept_as_its_text_and_what_came_before_is_read():
    early = said("before the provider compacted")
    compacted = msg("assistant", CompactionPart("provider's words", provider="anthropic"))
    history = [replace(early, compacted_by=compacted.id), compacted, said("after")]
    digest = record_digest(record_of(history, history[1:]))
    assert digest.user_words == ("before the provider compacted", "after")
    assert digest.foreign == ("provider's words",)


def test_an_error_result_keeps_its_totals_line_and_plural_failures():
    output = "\n".join(
        ["Exit code 2", *(f"  {i}) test case {i} failed" for i in range(6)), "5 tests, 4 failures"]
    )
    found = error_strings(ToolResultPart("c", "Bash", output, True))
    assert found[-1] == "5 tests, 4 failures"
    assert len(found) == 4
    assert error_strings(ToolResultPart("c", "Bash", "3 tests, 2 failures", True)) == [
        "3 tests, 2 failures"
    ]
