"""core.session.message_log: versions of the live context share storage, yet each stays what it was.

The oracle is a plain tuple and dict built beside the log, step by step."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.session.message_log import MessageLog
from tokend.core.types import Message, StoredPart, TextPart, ToolResultPart

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def msg(i: int, gated_chars: int | None = None) -> Message:
    part = (
        ToolResultPart(f"c{i}", "Read", "preview", gate="preview", original_chars=gated_chars)
        if gated_chars is not None
        else TextPart(f"message {i}")
    )
    return Message(f"m{i:05d}", "s", "user", (StoredPart(f"p{i}", part, 3),), T0)


# Each step appends to one of the versions made so far (an index into them, taken modulo).
steps = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 500), st.booleans()), min_size=1, max_size=60
)


@given(steps)
def test_every_version_keeps_its_own_messages_and_figures(plan):
    versions = [(MessageLog.of((), {}), (), {})]
    for n, (pick, tokens, gated) in enumerate(plan):
        log, messages, counts = versions[pick % len(versions)]
        message = msg(n, 100 + n if gated else None)
        versions.append(
            (log.appended(message, tokens), (*messages, message), {**counts, message.id: tokens})
        )
    for log, messages, counts in versions:
        assert tuple(log.messages) == messages and log.messages == messages
        assert len(log.messages) == len(messages)
        assert tuple(reversed(log.messages)) == tuple(reversed(messages))
        assert dict(log.tokens) == counts and len(log.tokens) == len(counts)
        assert log.total_tokens == sum(counts.values())
        gated = [m for m in messages if isinstance(m.parts[0].part, ToolResultPart)]
        assert log.gated.count == len(gated)
        assert log.gated.chars == sum(m.parts[0].part.original_chars for m in gated)
        if messages:
            assert log.messages[-1] == messages[-1] and log.messages[0] == messages[0]
            assert log.messages[1:] == messages[1:] and log.messages[:-1] == messages[:-1]


def test_an_older_version_does_not_see_a_newer_ones_message():
    first = MessageLog.of([msg(0)], {"m00000": 5})
    second = first.appended(msg(1), 7)
    sibling = first.appended(msg(2), 9)  # grown from the older version: a copy
    assert "m00001" not in first.tokens and len(first.messages) == 1
    assert [m.id for m in second.messages] == ["m00000", "m00001"]
    assert [m.id for m in sibling.messages] == ["m00000", "m00002"]
    assert "m00001" not in sibling.tokens and sibling.tokens["m00002"] == 9
    try:
        first.messages[1]
    except IndexError:
        pass
    else:
        raise AssertionError("an older version reads past its own end")
