"""core.checkpoints.turns and .summary: which turn a change belongs to, what a rewind writes,
and a file's diff (pure)."""

from __future__ import annotations

from tokend.core.checkpoints.summary import line_counts, unified_diff
from tokend.core.checkpoints.turns import (
    FileChange,
    TurnMark,
    assign,
    pair_moves,
    plan_restore,
    turns_of,
)

U1 = TurnMark("u1", 10.0, True)
CALL = TurnMark("a1", 11.0, False, open_calls=True)
RESULT = TurnMark("t1", 13.0, False, open_calls=True)
DONE = TurnMark("a2", 14.0, False)
U2 = TurnMark("u2", 20.0, True)


def change(seq: int, path: str, before: str | None, after: str | None, at: float, **kw):
    return FileChange(seq, path, before, after, at, **kw)


def test_a_turn_runs_from_the_user_message_to_its_last_agent_message():
    (turn,) = turns_of([U1, CALL, RESULT, DONE])
    assert (turn.start, turn.end) == (10.0, 14.0)
    (running,) = turns_of([U1, CALL])
    assert running.end is None  # a tool call in flight: the turn is still open
    interrupted, _ = turns_of([U1, CALL, U2])
    assert interrupted.end == 20.0  # the tool may have run until the user spoke again


def test_changes_between_turns_or_by_an_editor_are_not_the_agents():
    changes = [
        change(1, "a", "x", "y", 12.0),
        change(2, "b", "x", "y", 12.5, origin="editor"),
        change(3, "c", "x", "y", 16.0),  # after the last assistant message
        change(4, "d", "x", "y", 5.0),  # before the first turn
    ]
    (turn,) = assign([U1, CALL, RESULT, DONE], changes)
    assert [c.path for c in turn.agent] == ["a"]
    assert [c.path for c in turn.outside] == ["b", "c"]


def test_a_vanished_and_an_appeared_file_with_the_same_bytes_are_a_move():
    paired = pair_moves([change(1, "old", "h", None, 1.0), change(2, "new", None, "h", 1.0)])
    assert (paired[0].moved_to, paired[1].moved_from) == ("new", "old")


def test_a_rewind_keeps_what_someone_else_touched_unless_forced():
    marks = [U1, CALL, RESULT, DONE, U2]
    changes = [
        change(1, "a", "a0", "a1", 12.0),
        change(2, "b", "b0", "b1", 12.0),
        change(3, "a", "a1", "a2", 16.0),  # the user, between turns
        change(4, "c", None, "c1", 12.0),
    ]
    current = {"a": "a2", "b": "b1", "c": "c1"}
    plan = plan_restore(10.0, marks, changes, current, {"b"}, lambda sha: True, False)
    assert [(s.path, s.action, s.reason) for s in plan.steps] == [
        ("a", "kept", "changed since the agent's turn (outside a turn)"),
        ("b", "kept", "an editor holds unsaved changes to it"),
        ("c", "delete", None),
    ]
    forced = plan_restore(10.0, marks, changes, current, {"b"}, lambda sha: True, True)
    assert [(s.path, s.action, s.target) for s in forced.steps] == [
        ("a", "write", "a0"),
        ("b", "write", "b0"),
        ("c", "delete", None),
    ]


def test_a_file_changed_on_disk_unseen_is_a_conflict_and_an_unsaved_state_is_unavailable():
    changes = [change(1, "a", "a0", "a1", 12.0), change(2, "b", "b0", "b1", 12.0)]
    plan = plan_restore(
        10.0, [U1, DONE], changes, {"a": "zz", "b": "b1"}, (), lambda sha: sha != "b0", False
    )
    assert [(s.path, s.action) for s in plan.steps] == [("a", "kept"), ("b", "unavailable")]


def test_diffs_and_line_counts_read_bytes_as_git_would():
    assert line_counts(b"a\nb\n", b"a\nc\nd\n") == (2, 1)
    assert line_counts(b"\x00bin", b"x") is None
    assert unified_diff("f", b"a", b"b") == (
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n"
        "\\ No newline at end of file\n"
    )
    assert unified_diff("f", None, b"x\n") == "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n"
