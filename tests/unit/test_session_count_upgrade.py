"""core.session.count_upgrade: an exact count replacing a big message's estimate moves what was added
since the last provider call, or nothing the gauge shows when that call came after it; a
message no longer in the window is left alone. Figures are given (no counter runs): the
expected gauge is the provider's figure plus what the test added by hand."""

from __future__ import annotations

from datetime import UTC, datetime

from tokend.core.models.catalog import ModelInfo
from tokend.core.session.changes import AppendMessage, CountsUpgraded, PartCounts
from tokend.core.session.data import SessionData
from tokend.core.session.evolve import evolve
from tokend.core.session.message_log import MessageLog
from tokend.core.types import Message, SessionInfo, StoredPart, TextPart, Usage

AT = datetime(2026, 11, 26, tzinfo=UTC)
MODEL = ModelInfo("claude-opus-4-6", "anthropic", 200_000, 64_000, tokenizer="claude-v3")


def empty() -> SessionData:
    info = SessionInfo("s1", MODEL.name, AT, AT)
    return SessionData(info=info, model=MODEL, log=MessageLog.of((), {}), version=0)


def append(data: SessionData, mid: str, tokens: int, *, estimated=False, usage=None):
    message = Message(
        mid,
        "s1",
        "assistant" if usage else "user",
        (StoredPart(f"p-{mid}", TextPart("x" * 10), tokens - 20),),
        AT,
        usage=usage,
    )
    counts = PartCounts((tokens - 20,), (True,), 20, estimated=estimated)
    return evolve(data, AppendMessage(message, counts, learn=False)).data


def test_a_count_after_the_last_call_moves_the_gauge_by_the_difference() -> None:
    data = append(empty(), "call", 120, usage=Usage(input_tokens=1_000, output_tokens=100))
    data = append(data, "big", 50_000, estimated=True)
    before = data.used_tokens()[0]
    assert data.pending_exact == {"big"}
    after = evolve(data, CountsUpgraded("big", (48_980,), 49_000)).data
    assert after.used_tokens()[0] == before - 1_000
    assert after.message_tokens["big"] == 49_000 and after.pending_exact == frozenset()
    assert after.messages[-1].parts[0].tokens == 48_980 and after.version == data.version + 1


def test_a_count_before_the_last_call_leaves_the_providers_figure() -> None:
    data = append(empty(), "big", 50_000, estimated=True)
    data = append(data, "call", 120, usage=Usage(input_tokens=49_500, output_tokens=100))
    before = data.used_tokens()[0]
    after = evolve(data, CountsUpgraded("big", (48_980,), 49_000)).data
    assert after.used_tokens()[0] == before == 49_600
    assert after.message_tokens["big"] == 49_000


def test_a_message_gone_from_the_window_is_left_alone() -> None:
    data = append(empty(), "big", 50_000, estimated=True)
    data = append(data, "next", 40)
    gone = evolve(data, CountsUpgraded("other", (1,), 21)).data
    assert gone.log.tokens == data.log.tokens and gone.version == data.version
    assert gone.pending_exact == data.pending_exact
