"""Estimate first, exact later, through the service on a real SQLite file: a big Claude message
is appended with its estimate and upgraded to its exact count (oracle: ctok's ClaudeCounter on
the text) in the order of appends; a message rewound or pruned before its count lands is left
as it is."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import ctok
import pytest

from tokend.core.session.changes import PruneParts, Rewind
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service
from tokend.service.service import TokendService

FRAME = 20  # each Claude message's measured framing (protocol.md, Claude models)


def claude_v3(text: str) -> int:
    """ctok's count of `text` as content: one user message's request, less its 7-token frame."""
    return int(ctok.token_count(text, "3.0")) - 7


def big_text(chars: int, start: int = 0) -> str:
    lines = (
        f"row {i:05d}: user_{i % 97} bought {i % 13} items for ${i * 7 % 1000}.{i % 100:02d}"
        for i in range(start, start + chars // 40)
    )
    return "\n".join(lines)


@pytest.fixture
def service(tmp_path: Path) -> TokendService:
    opened = open_service(None, f"sqlite:///{tmp_path / 'tokend.sqlite3'}")
    yield opened
    opened.close()


async def test_a_big_message_is_estimated_then_counted_exactly_in_order(
    service: TokendService, tmp_path: Path
) -> None:
    sid = service.sessions.create_session("claude-opus-4-6").id
    text = big_text(120_000)
    exact = claude_v3(text) + FRAME
    big = await service.appends.append(sid, "user", [TextPart(text)])
    state = service.sessions.state(sid)  # the count's task has not run yet: nothing awaited since
    assert big.tokens != exact and [b.basis for b in state.snapshot.breakdown] == ["estimate"]
    small = await service.appends.append(sid, "user", [TextPart("and the totals per user?")])
    assert big.version < small.version
    await service.upgrades.drain()
    assert state.data.message_tokens[big.message_id] == exact
    assert [m.id for m in state.data.messages] == [big.message_id, small.message_id]
    assert state.data.version == 3 and [b.basis for b in state.snapshot.breakdown] == ["exact"]
    used = state.snapshot.used_tokens
    service.close()
    reopened = open_service(None, f"sqlite:///{tmp_path / 'tokend.sqlite3'}")
    try:
        again = reopened.sessions.state(sid).data
        assert again.message_tokens[big.message_id] == exact
        parts = next(m for m in again.messages if m.id == big.message_id).parts
        assert parts[0].tokens == exact - FRAME
        assert reopened.sessions.snapshot(sid).used_tokens == used
    finally:
        reopened.close()


async def test_a_message_rewound_before_its_count_lands_is_left_alone(
    service: TokendService,
) -> None:
    sid = service.sessions.create_session("claude-opus-4-6").id
    first = await service.appends.append(sid, "user", [TextPart("read the log")])
    big = await service.appends.append(sid, "user", [TextPart(big_text(120_000))])
    state = service.sessions.state(sid)
    state.apply(Rewind(first.message_id, (big.message_id,), datetime.now(UTC)))
    version, used = state.data.version, state.snapshot.used_tokens
    await service.upgrades.drain()
    assert (state.data.version, state.snapshot.used_tokens) == (version, used)
    assert [b.basis for b in state.snapshot.breakdown] == ["exact"]


async def test_a_result_pruned_before_its_count_lands_keeps_its_placeholder(
    service: TokendService,
) -> None:
    sid = service.sessions.create_session("claude-opus-4-6").id
    call = ToolCallPart("toolu_1", "Read", {"file_path": "big.log"})  # Read: not gated
    await service.appends.append(sid, "assistant", [call])
    result = ToolResultPart("toolu_1", "Read", big_text(120_000))
    big = await service.appends.append(sid, "tool", [result])
    state = service.sessions.state(sid)
    message = next(m for m in state.data.messages if m.id == big.message_id)
    placeholder = FRAME + service.models.counter(state.data.model).pruned_tokens()
    pruned = PruneParts(
        frozenset({message.parts[0].id}), datetime.now(UTC), {big.message_id: placeholder}
    )
    state.apply(pruned)
    version = state.data.version
    await service.upgrades.drain()
    assert state.data.version == version
    assert state.data.message_tokens[big.message_id] == placeholder


async def test_a_count_landing_after_a_provider_call_leaves_the_gauge_on_the_call(
    service: TokendService,
) -> None:
    sid = service.sessions.create_session("claude-opus-4-6").id
    text = big_text(120_000)
    big = await service.appends.append(sid, "user", [TextPart(text)])
    usage = Usage(input_tokens=31_000, output_tokens=12)
    await service.appends.append(sid, "assistant", [TextPart("It is a sales log.")], usage=usage)
    state = service.sessions.state(sid)
    used = state.snapshot.used_tokens
    await service.upgrades.drain()
    exact = claude_v3(text) + FRAME
    assert state.data.message_tokens[big.message_id] == exact
    assert state.snapshot.used_tokens == used  # the provider's figure already holds it


async def test_the_estimate_learns_from_the_exact_counts_that_land(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tokend.sqlite3'}"
    first, second = big_text(120_000, start=0), big_text(120_000, start=5_000)
    exact = claude_v3(second) + FRAME
    cold_service = open_service(None, f"sqlite:///{tmp_path / 'cold.sqlite3'}")
    try:
        sid = cold_service.sessions.create_session("claude-opus-4-6").id
        cold = (await cold_service.appends.append(sid, "user", [TextPart(second)])).tokens
        await cold_service.upgrades.drain()
    finally:
        cold_service.close()
    service = open_service(None, url)
    try:
        sid = service.sessions.create_session("claude-opus-4-6").id
        await service.appends.append(sid, "user", [TextPart(first)])
        await service.upgrades.drain()
        learnt = (await service.appends.append(sid, "user", [TextPart(second)])).tokens
        await service.upgrades.drain()
    finally:
        service.close()
    assert abs(learnt - exact) < 0.8 * abs(cold - exact), (cold, learnt, exact)
    reopened = open_service(None, url)  # what was learnt is kept with the calibration
    try:
        sid = reopened.sessions.create_session("claude-opus-4-6").id
        again = (await reopened.appends.append(sid, "user", [TextPart(second)])).tokens
        await reopened.upgrades.drain()
    finally:
        reopened.close()
    assert abs(again - exact) < 0.8 * abs(cold - exact), (cold, again, exact)


async def test_a_service_closed_before_a_count_lands_stores_it_as_it_closes(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'tokend.sqlite3'}"
    text = big_text(120_000)
    service = open_service(None, url)
    sid = service.sessions.create_session("claude-opus-4-6").id
    big = await service.appends.append(sid, "user", [TextPart(text)])
    assert big.tokens != claude_v3(text) + FRAME
    service.close()  # at once: the count's task has not run
    reopened = open_service(None, url)
    try:
        data = reopened.sessions.state(sid).data
        assert data.message_tokens[big.message_id] == claude_v3(text) + FRAME
        assert [b.basis for b in reopened.sessions.snapshot(sid).breakdown] == ["exact"]
    finally:
        reopened.close()
