"""Claude Code's status-line cost fields from a session's messages: wall and API durations,
lines added and removed by edit tool calls (counted here by hand from the edits' text)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tokend.core.types import Message, StoredPart, TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.core.usage.stats import edit_lines, time_figures

T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def msg(i, role, parts, at, done=None, usage=None):
    stored = tuple(StoredPart(f"p{i}-{n}", p, None) for n, p in enumerate(parts))
    return Message(f"m{i}", "s", role, stored, at, usage=usage, completed_at=done)


def test_durations_and_lines_of_a_session():
    edit = {
        "file_path": "a.py",
        "old_string": "x = 1\ny = 2\n",
        "new_string": "x = 1\ny = 3\nz = 4\n",
    }
    write = {"file_path": "b.py", "content": "one\ntwo\nthree\n"}
    broken = {"file_path": "c.py", "old_string": "gone\n", "new_string": ""}
    messages = [
        msg(0, "user", [TextPart("fix it")], T0),
        msg(
            1,
            "assistant",
            [ToolCallPart("e1", "Edit", edit), ToolCallPart("w1", "Write", write)],
            T0 + timedelta(seconds=2),
            done=T0 + timedelta(seconds=5, milliseconds=250),
            usage=Usage(10, 5),
        ),
        msg(
            2,
            "tool",
            [ToolResultPart("e1", "Edit", "ok"), ToolResultPart("w1", "Write", "ok")],
            T0 + timedelta(seconds=6),
        ),
        msg(
            3,
            "assistant",
            [ToolCallPart("e2", "Edit", broken)],
            T0 + timedelta(seconds=7),
            done=T0 + timedelta(seconds=8),
            usage=Usage(10, 5),
        ),
        msg(
            4,
            "tool",
            [ToolResultPart("e2", "Edit", "no match", is_error=True)],
            T0 + timedelta(seconds=9),
        ),
        msg(
            5,
            "assistant",
            [TextPart("done")],
            T0 + timedelta(seconds=10),
            done=T0 + timedelta(seconds=10),
            usage=Usage(1, 1),
        ),
    ]
    figures = time_figures(messages)
    assert figures.wall_duration_ms == 10_000
    assert figures.api_duration_ms == 3_250 + 1_000  # the third reply reported no duration
    # By hand: the edit changes "y = 2" into "y = 3" and adds "z = 4"; the write adds 3 lines;
    # the failed edit counts nothing.
    assert (figures.lines_added, figures.lines_removed) == (2 + 3, 1)


def test_no_reported_request_time_means_no_api_duration():
    same = [msg(0, "assistant", [TextPart("hi")], T0, done=T0, usage=Usage(1, 1))]
    assert time_figures(same).api_duration_ms is None
    assert time_figures([]).wall_duration_ms == 0


def test_other_edit_tools():
    assert edit_lines("MultiEdit", {"edits": [{"old_string": "a", "new_string": "b\nc"}]}) == (2, 1)
    assert edit_lines(
        "str_replace_based_edit_tool", {"command": "create", "file_text": "1\n2"}
    ) == (2, 0)
    assert edit_lines("str_replace_based_edit_tool", {"command": "view", "path": "x"}) == (0, 0)
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-old\n+new\n+more\n*** End Patch"
    assert edit_lines("apply_patch", {"input": patch}) == (2, 1)
    assert edit_lines("mcp__fs__edit", {"old_string": "a", "new_string": "a"}) == (0, 0)
    assert edit_lines("Bash", {"command": "sed -i s/a/b/ x"}) == (0, 0)
