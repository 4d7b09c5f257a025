"""core.compaction.plan.halve, the cut of aider's recursive summary: properties over any run of
messages and token counts. Oracles: the input itself (order, concatenation) and sums of the
counts the test drew."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.compaction.plan import halve
from tokend.core.types import CompactionPart, Message, StoredPart, TextPart

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(sizes: list[int], with_summary: bool) -> tuple[list[Message], dict[str, int]]:
    messages = [
        Message(f"m{i}", "s1", "user", (StoredPart(f"m{i}.t", TextPart("x"), n),), T0)
        for i, n in enumerate(sizes)
    ]
    if with_summary:
        part = StoredPart("s.c", CompactionPart("earlier"), 50)
        messages.insert(0, Message("s", "s1", "system", (part,), T0, summary=True))
    tokens = {m.id: m.parts[0].tokens or 0 for m in messages}
    return messages, tokens


@given(st.lists(st.integers(0, 5_000), max_size=40), st.booleans())
def test_the_halves_are_the_run_in_order_each_with_a_message_to_summarize(sizes, with_summary):
    messages, tokens = run(sizes, with_summary)
    halves = halve(messages, tokens)
    if len(sizes) < 2:
        assert halves is None
        return
    assert halves is not None
    first, second = halves
    assert [*first, *second] == messages
    assert any(not m.summary for m in first) and any(not m.summary for m in second)
    assert not any(m.summary for m in second)  # a previous summary stays first


@given(st.lists(st.integers(1, 5_000), min_size=2, max_size=40))
def test_the_cut_is_the_first_boundary_reaching_half_the_tokens(sizes):
    messages, tokens = run(sizes, False)
    halves = halve(messages, tokens)
    assert halves is not None
    cut = len(halves[0])
    total = sum(sizes)
    # The first boundary at or past half the tokens, unless that leaves the second run empty.
    reaching = next(i + 1 for i in range(len(sizes)) if 2 * sum(sizes[: i + 1]) >= total)
    assert cut == min(reaching, len(sizes) - 1)
