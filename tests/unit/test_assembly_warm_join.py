"""Found (issue 22): a warm `context/assemble` of a long session joined every wire message of
the history again (core/assembly/wire_join.py) and looked up every message's tokens, on every
call, though only a message or two had been appended since. The history's join now goes on
from the last one (core/assembly/join_prefix.py) and its tokens come from the log's total less
the current turn's (AssemblyRequest.history_tokens).

Oracles: the wire messages handed to the Joiner and the token lookups made, counted per call;
the request a plain reference writes for a session of text turns; the same assembly without a
render cache (built from scratch) for any history, after each append."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.assembly import wire_join
from tokend.core.assembly.assemble import AssemblyRequest, assemble
from tokend.core.assembly.render_cache import RenderCache
from tokend.core.assembly.wire_formats import WIRE_FORMATS
from tokend.core.types import Message, StoredPart, TextPart

from .test_assembly_wire_formats import T0, histories

OVERHEAD = 3


class _Lookups(Mapping[str, int]):
    """Message id -> tokens, counting the lookups made."""

    def __init__(self, tokens: dict[str, int]) -> None:
        self.tokens, self.count = tokens, 0

    def __getitem__(self, key: str) -> int:
        self.count += 1
        return self.tokens[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.count += 1
        return self.tokens.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)


def _turns(count: int, start: int = 0) -> list[Message]:
    return [
        Message(
            f"m{i}",
            "s1",
            "user" if i % 2 == 0 else "assistant",
            (StoredPart(f"p{i}", TextPart(f"turn {i} ✓"), 2 + i % 5),),
            T0,
        )
        for i in range(start, start + count)
    ]


def _request(history: list[Message], cache: RenderCache | None) -> AssemblyRequest:
    tokens = {m.id: OVERHEAD + sum(sp.tokens or 0 for sp in m.parts) for m in history}
    return AssemblyRequest(
        format="openai",
        limit_tokens=10**9,
        history=tuple(history),
        system="You are careful.",
        system_tokens=7,
        message_overhead=lambda _m: OVERHEAD,
        render_cache=cache,
        message_tokens=_Lookups(tokens),
        history_tokens=sum(tokens.values()),
        pruned_result_tokens=5,
    )


@pytest.fixture
def joined(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The wire messages each Joiner.extend call was handed."""
    counts: list[int] = []
    real = wire_join.Joiner.extend

    def extend(self: wire_join.Joiner, wires: Any) -> None:
        wires = list(wires)
        counts.append(len(wires))
        real(self, wires)

    monkeypatch.setattr(wire_join.Joiner, "extend", extend)
    return counts


def test_a_warm_assembly_joins_and_looks_up_only_what_was_appended(joined: list[int]) -> None:
    cache, history = RenderCache(), _turns(1_000)
    assemble(_request(history, cache))
    joined.clear()
    again = _request(history, cache)
    warm = assemble(again)
    assert sum(joined) == 2  # the current turn's two; main: 1,000 (all of them again)
    assert again.message_tokens is not None
    assert again.message_tokens.count == 2  # the current turn's; main: 1,000
    history += _turns(2, start=1_000)
    joined.clear()
    grown = assemble(_request(history, cache))
    assert sum(joined) == 4  # the turn before (now history) and the new current turn
    # The oracle: the request a plain reference writes, and the chunks summed here.
    expected = [{"role": "system", "content": "You are careful."}] + [
        {"role": m.role, "content": f"turn {m.id[1:]} ✓"} for m in history
    ]
    assert list(grown.messages) == expected
    assert list(warm.messages) == expected[:-2]
    per_message = [OVERHEAD + 2 + i % 5 for i in range(1_002)]
    chunks = dict(grown.chunks)
    assert chunks["history"] == sum(per_message[:-2])  # the last user turn starts "current"
    assert chunks["current"] == sum(per_message[-2:])
    assert grown.total_tokens == 7 + sum(per_message)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_each_warm_assembly_is_the_one_built_from_scratch(data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(WIRE_FORMATS))
    whole = data.draw(histories(max_turns=6))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(whole)), min_size=1, max_size=4)))
    cache = RenderCache()
    for cut in [*cuts, len(whole)]:
        request = dataclasses.replace(
            _request(whole[:cut], cache), format=fmt, message_tokens=None, history_tokens=None
        )
        warm = assemble(request)
        cold = assemble(dataclasses.replace(request, render_cache=None))
        assert warm == cold
