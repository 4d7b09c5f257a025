"""The extractive summary: the user's words verbatim, the artifact index from the tool calls,
exact errors, and where the verbatim tail starts. Pure core, no tokenizer: budgets are counted
with a whitespace word count, an oracle that shares nothing with the code under test."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from itertools import count
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.artifacts import extract_artifacts
from tokend.core.compaction.digest import digest_to_json
from tokend.core.compaction.plan import can_start_tail, split_window, tail_budget_tokens
from tokend.core.compaction.summary import digest_of, render_summary
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


def words(texts: Any) -> list[int]:
    return [len(t.split()) for t in texts]


def msg(role: Any, *parts: Any, summary: bool = False) -> Message:
    n = next(_ids)
    stored = tuple(StoredPart(f"p{n}.{i}", p, 10) for i, p in enumerate(parts))
    return Message(f"m{n:04d}", "s", role, stored, T0, summary=summary)


def call(call_id: str, name: str, **value: Any) -> Message:
    return msg("assistant", ToolCallPart(call_id, name, value))


def result(call_id: str, name: str, output: str, is_error: bool = False) -> Message:
    return msg("tool", ToolResultPart(call_id, name, output, is_error))


def agent_session() -> list[Message]:
    """A Claude Code-shaped session (tool names and input keys as its transcripts have them)."""
    return [
        msg("user", TextPart("Fix the failing login test; do not touch the schema.")),
        call("c1", "Read", file_path="lib/auth.ex"),
        result("c1", "Read", "defmodule Auth do ... end"),
        call("c2", "Edit", file_path="lib/auth.ex", old_string="a", new_string="b"),
        result("c2", "Edit", "The file lib/auth.ex has been updated."),
        call("c3", "Write", file_path="test/login_test.exs", content="..."),
        result("c3", "Write", "File created successfully at: test/login_test.exs"),
        call("c4", "Bash", command="mix test test/login_test.exs"),
        result(
            "c4",
            "Bash",
            "Exit code 2\nCompiling 3 files (.ex)\n** (CompileError) lib/auth.ex:12: undefined "
            "function hash/1\n    (elixir) lib/kernel.ex:1: more",
            is_error=True,
        ),
        call("c5", "Bash", command="rm -f tmp/old_fixture.json && git status"),
        result("c5", "Bash", "On branch main"),
        call("c6", "Edit", file_path="mix.exs", old_string="x", new_string="y"),
        result(
            "c6",
            "Edit",
            "The user doesn't want to proceed with this tool use. The tool use was rejected",
            is_error=True,
        ),
        call("c7", "apply_patch", input="*** Begin Patch\n*** Delete File: lib/legacy.ex\n"),
        result("c7", "apply_patch", "Done"),
        msg("user", TextPart("Also keep the old API working.")),
        msg("assistant", TextPart("The login test passes now. Next I will restore the old API.")),
        call(
            "c8",
            "TodoWrite",
            todos=[
                {"content": "Fix login test", "status": "completed"},
                {"content": "Restore the old API", "status": "in_progress"},
            ],
        ),  # fmt: skip
        result("c8", "TodoWrite", "ok"),
    ]


def test_the_artifact_index_is_what_the_tool_calls_did():
    found = extract_artifacts(agent_session())
    files = {t.path: dict(t.ops) for t in found.files}
    assert files == {
        "lib/auth.ex": {"read": 1, "edited": 1},
        "test/login_test.exs": {"created": 1},
        "tmp/old_fixture.json": {"deleted": 1},
        "mix.exs": {"edit failed": 1},
        "lib/legacy.ex": {"deleted": 1},
    }
    assert [(c.command, c.status) for c in found.commands] == [
        ("mix test test/login_test.exs", "exit 2"),
        ("rm -f tmp/old_fixture.json && git status", "exit 0"),
    ]
    assert "** (CompileError) lib/auth.ex:12: undefined function hash/1" in found.errors
    assert not any("doesn't want to proceed" in e for e in found.errors)
    assert found.todos[-1] == ("in_progress", "Restore the old API")


def test_the_summary_holds_the_users_words_the_index_the_errors_and_the_next_step():
    digest = digest_of(agent_session())
    text = render_summary(digest, words, target_tokens=2_000).text
    assert "Fix the failing login test; do not touch the schema." in text
    assert "Also keep the old API working." in text
    for path in ("lib/auth.ex", "test/login_test.exs", "tmp/old_fixture.json", "lib/legacy.ex"):
        assert path in text
    assert "`mix test test/login_test.exs` → exit 2" in text
    assert "** (CompileError) lib/auth.ex:12: undefined function hash/1" in text
    assert "## Next step\nContinue: Restore the old API" in text
    # Deterministic: the same history gives the same text.
    assert render_summary(digest_of(agent_session()), words, target_tokens=2_000).text == text


@given(st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=60), max_size=30),
       st.integers(0, 400))  # fmt: skip
def test_user_words_are_kept_verbatim_newest_first_within_their_budget(said, budget):
    history = [msg("user", TextPart(t)) for t in said]
    digest = digest_of(history)
    rendered = render_summary(digest, words, target_tokens=500, user_words_tokens=budget)
    typed = list(digest.user_words)
    shown = re.search(r"--- user message 1 of (\d+) ---", rendered.text)
    kept = typed[len(typed) - int(shown.group(1)) :] if shown else []
    # What is kept is the newest run, whole and in order, within the budget (a word count per
    # message + 1).
    blocks = [f"--- user message {i} of {len(kept)} ---\n{t}" for i, t in enumerate(kept, 1)]
    assert not kept or "\n".join(blocks) in rendered.text
    assert sum(len(t.split()) + 1 for t in kept) <= budget
    assert rendered.dropped.get("userMessages", 0) == len(typed) - len(kept)


def test_a_previous_summary_is_merged_not_summarized_again():
    first = agent_session()
    digest = digest_of(first)
    summary = msg("system", CompactionPart("old text", digest_to_json(digest)), summary=True)
    later = [
        msg("user", TextPart("Now bump the version.")),
        call("d1", "Edit", file_path="VERSION", old_string="1", new_string="2"),
        result("d1", "Edit", "The file VERSION has been updated."),
    ]
    merged = digest_of([summary, *later])
    assert merged.user_words == (*digest.user_words, "Now bump the version.")
    assert {t.path for t in merged.files} == {t.path for t in digest.files} | {"VERSION"}
    assert merged.objective == "Fix the failing login test; do not touch the schema."
    assert merged.messages == digest.messages + 3
    assert "old text" not in render_summary(merged, words, target_tokens=2_000).text


def test_files_survive_a_budget_that_drops_commands_and_conclusions():
    digest = digest_of(agent_session())
    tight = render_summary(digest, words, target_tokens=60)
    assert all(t.path in tight.text for t in digest.files)
    assert tight.dropped  # something had to go, and the summary says what


def test_the_tail_starts_where_no_tool_result_is_cut_from_its_call():
    history = agent_session()
    tokens = {m.id: 100 for m in history}
    split = split_window(history, tokens, 450)
    assert not isinstance(split, str)
    assert split.tail and can_start_tail(split.tail[0])
    assert split.tail_tokens <= 450 and split.head + split.tail == tuple(history)
    shortest = split_window(history, tokens, 0)
    assert not isinstance(shortest, str) and len(shortest.tail) == 2  # the todo call + result
    at = split_window(history, tokens, 0, from_message_id=history[15].id)
    assert not isinstance(at, str) and at.tail[0] is history[15]
    refused = split_window(history, tokens, 0, from_message_id=history[2].id)
    assert isinstance(refused, str) and "tool calls" in refused


def test_the_tail_budget_is_a_quarter_of_the_usable_window_clamped():
    assert tail_budget_tokens(168_000) == 15_000
    assert tail_budget_tokens(20_000) == 5_000
    assert tail_budget_tokens(4_000) == 2_000
