"""The prune tier: which old tool output is cleared, and what is never touched."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.compaction.prune import PruneConfig, plan_prune
from tokend.core.types import (
    CompactionPart,
    Message,
    Role,
    StoredPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

from .test_assembly_wire_formats import PRUNED_AT, T0, histories

SMALL = PruneConfig(protect_tokens=100, minimum_tokens=50, protected_tools=("skill",))


def user(mid: str) -> Message:
    return Message(mid, "s1", "user", (StoredPart(f"{mid}.t", TextPart("next"), 2),), T0)


def step(mid: str, tokens: int, tool: str = "read", compacted: bool = False) -> Message:
    """An assistant step calling `tool` with a result of `tokens` (its part id is `mid`.r)."""
    call = StoredPart(f"{mid}.c", ToolCallPart(mid, tool, {}), 5)
    result = ToolResultPart(mid, tool, "output")
    stored = StoredPart(f"{mid}.r", result, tokens, PRUNED_AT if compacted else None)
    return Message(mid, "s1", "assistant", (call, stored), T0)


def session(*turns: list[Message]) -> list[Message]:
    return [m for i, turn in enumerate(turns) for m in [user(f"u{i}"), *turn]]


def test_old_output_beyond_the_protected_window_is_pruned_oldest_first():
    history = session(
        [step("a", 40), step("b", 40)],
        [step("c", 40), step("d", 40)],
        [step("e", 40)],  # the older of the last two turns: protected
        [step("f", 999)],  # the current turn: protected
    )
    plan = plan_prune(history, SMALL)
    # walking back from d: d=40, c=80, b=120 > 100 (pruned), a pruned
    assert plan.part_ids == ("a.r", "b.r")
    assert plan.freed_tokens == 80
    assert plan.skipped_reason is None


def test_too_little_to_free_gives_an_empty_plan_that_says_why():
    history = session([step("a", 30), step("b", 90)], [], [])
    plan = plan_prune(history, SMALL)
    assert plan.part_ids == () and plan.freed_tokens == 0
    assert plan.skipped_reason == "pruning would free only 30 tokens, under the minimum of 50"
    plan = plan_prune(session([step("a", 60)], [], []), SMALL)
    assert plan.part_ids == () and "within the 100 tokens kept" in (plan.skipped_reason or "")


def test_protected_tools_are_never_pruned_nor_counted():
    history = session([step("a", 500, tool="skill"), step("b", 120), step("c", 80)], [], [])
    plan = plan_prune(history, SMALL)
    assert plan.part_ids == ("b.r",)


def test_the_walk_stops_at_an_earlier_compaction():
    summary_part = StoredPart("s.p", CompactionPart("summary"), 50)
    summary = Message("s", "s1", "assistant", (summary_part,), T0, summary=True)
    before = [step("old", 5000)]
    history = [user("u0"), *before, summary, *session([step("a", 80), step("b", 80)], [], [])]
    assert plan_prune(history, SMALL).part_ids == ("a.r",)
    already = session([step("x", 5000), step("p", 80, compacted=True), step("a", 80)], [], [])
    plan = plan_prune(already, SMALL)
    assert plan.part_ids == () and "x.r" not in plan.part_ids


def test_fewer_than_two_user_turns_prunes_nothing():
    plan = plan_prune(session([step("a", 90_000), step("b", 90_000)]))
    assert plan.part_ids == ()
    assert plan.skipped_reason is not None and "two user turns" in plan.skipped_reason


@pytest.mark.parametrize("carrier", ["tool", "user"])
def test_results_sent_in_their_own_message_do_not_start_a_user_turn(carrier: Role):
    """Claude Code stores results in "tool" messages; the Anthropic API sends them in a user
    message. Neither is a user turn, so the last two user turns stay whole."""

    def call_then_result(mid: str) -> list[Message]:
        call = StoredPart(f"{mid}.c", ToolCallPart(mid, "read", {}), 5)
        result = StoredPart(f"{mid}.r", ToolResultPart(mid, "read", "output"), 200)
        return [Message(f"{mid}.a", "s1", "assistant", (call,), T0),
                Message(mid, "s1", carrier, (result,), T0)]  # fmt: skip

    history = session(
        [*call_then_result("a"), *call_then_result("b")],
        [*call_then_result("c"), *call_then_result("d")],  # the older of the last two turns
        [],
    )
    assert plan_prune(history, SMALL).part_ids == ("a.r", "b.r")


def test_default_config_is_opencodes_constants():
    history = session([step(f"s{i}", 10_000) for i in range(10)], [], [])
    plan = plan_prune(history)
    # 100,000 of output: the newest 40,000 kept; the result that crosses the line goes too
    assert plan.freed_tokens == 60_000 and len(plan.part_ids) == 6


# --- properties ---------------------------------------------------------------------------


def protected_ids(history: list[Message]) -> set[str]:
    """Part ids in the last two user turns, the rule as protocol.md states it, written here from
    the roles and part kinds (not with core.compaction.prune's helpers, the code under test): a user turn
    starts at a message the user typed (role "user", not a summary, no "toolResult" part) and
    runs to the next one. With fewer than two user turns everything is recent."""
    starts = [
        i
        for i, m in enumerate(history)
        if m.role == "user" and not m.summary and all(p.part.kind != "toolResult" for p in m.parts)
    ]
    start = starts[-2] if len(starts) >= 2 else 0
    return {p.id for m in history[start:] for p in m.parts}


@st.composite
def any_client_histories(draw: st.DrawFn) -> list[Message]:
    """histories() with tool results sent as OpenCode/Claude Code do ("tool" messages) or, as
    the Anthropic API and Claude Code transcripts do, in a user message (sometimes with a
    reminder text beside them): such a user message is not a user turn."""
    history = draw(histories(max_turns=8))
    shaped: list[Message] = []
    for m in history:
        shape = draw(st.sampled_from(["tool", "user", "user+text"])) if m.role == "tool" else ""
        if shape == "user":
            m = replace(m, role="user")
        elif shape == "user+text":
            note = StoredPart(f"{m.id}.note", TextPart("<system-reminder>"), 3)
            m = replace(m, role="user", parts=(*m.parts, note))
        shaped.append(m)
    return shaped


@settings(max_examples=200, deadline=None)
@given(
    history=any_client_histories(),
    protect=st.integers(0, 6_000),
    minimum=st.integers(0, 6_000),
)
def test_prune_plans_respect_every_rule(history: list[Any], protect: int, minimum: int):
    cfg = PruneConfig(protect_tokens=protect, minimum_tokens=minimum, protected_tools=("skill",))
    plan = plan_prune(history, cfg)
    parts = {p.id: p for m in history for p in m.parts}
    assert not set(plan.part_ids) & protected_ids(history)
    if plan.part_ids:
        assert plan.freed_tokens >= minimum
        assert plan.freed_tokens == sum(parts[i].tokens or 0 for i in plan.part_ids)
        assert all(isinstance(parts[i].part, ToolResultPart) for i in plan.part_ids)
        assert all(parts[i].compacted_at is None for i in plan.part_ids)
        order = [p.id for m in history for p in m.parts if p.id in set(plan.part_ids)]
        assert list(plan.part_ids) == order  # oldest first
        # nothing at or before an earlier compaction (a summary or an already pruned result)
        flat = [(m, p) for m in history for p in m.parts]
        oldest = next(i for i, (_, p) in enumerate(flat) if p.id == plan.part_ids[0])
        walked = [(m, p) for m, p in flat[oldest:] if p.id not in protected_ids(history)]
        assert not any(m.summary for m, _ in walked)
        assert not any(
            isinstance(p.part, ToolResultPart) and p.compacted_at is not None for _, p in walked
        )
    else:
        assert plan.freed_tokens == 0 and plan.skipped_reason
