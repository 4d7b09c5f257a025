"""Parts and JSON values survive the trip through the store's JSON columns unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.adapters.store import SqlStore, new_id
from tokend.adapters.store.codec import (
    PART_KINDS,
    dumps_json,
    loads_json,
    part_from_json,
    part_to_json,
    usage_from_json,
    usage_to_json,
)
from tokend.adapters.store.url import sqlite_url
from tokend.core.types import (
    Message,
    ReasoningPart,
    StoredPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

from .conftest import T0, session_info

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.text(st.characters(categories=["Cs", "Lo", "Nd"])),  # with lone surrogates
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

parts = st.one_of(
    st.builds(
        ToolCallPart, call_id=st.text(max_size=8), name=st.text(max_size=8), input=json_values
    ),
    st.builds(
        ReasoningPart,
        text=st.text(),
        provider_metadata=st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    ),
    st.builds(
        ToolResultPart, call_id=st.text(), name=st.text(), output=st.text(), is_error=st.booleans()
    ),
)


@given(parts)
def test_part_json_round_trip(part):
    assert part_from_json(part.kind, loads_json(dumps_json(part_to_json(part)))) == part


def test_every_kind_of_the_domain_is_known():
    from typing import get_args

    from tokend.core.types import Part

    assert sorted(PART_KINDS) == sorted(
        cls.__dataclass_fields__["kind"].default for cls in get_args(Part)
    )


def test_unknown_kinds_and_non_parts_are_refused():
    with pytest.raises(ValueError, match="unknown part kind"):
        part_from_json("video", {})
    with pytest.raises(TypeError):
        part_to_json({"kind": "text", "text": "x"})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqlStore]:
    path: Path = tmp_path_factory.mktemp("codec") / "tokend.sqlite3"
    with SqlStore.open(sqlite_url(path)) as store:
        store.create_session(session_info("s1"))
        yield store


@settings(max_examples=60, deadline=None)
@given(st.lists(parts, min_size=1, max_size=4))
def test_any_json_in_parts_round_trips_through_sqlite(shared_store: SqlStore, generated):
    sent = Message(
        id=new_id(),
        session_id="s1",
        role="assistant",
        parts=tuple(StoredPart(new_id(), part) for part in generated),
        created_at=T0,
    )
    shared_store.append_message(sent)
    assert shared_store.messages.load_all_messages("s1")[-1] == sent


def test_a_usage_without_provider_edits_is_stored_as_before_them() -> None:
    """The context editing figures (issue 21) are written only when the provider cleared
    something: a call without edits is the JSON an older tokend reads (Usage(**data))."""
    plain = Usage(3, 41, 0, 11_515, 13_835)
    assert usage_to_json(plain) == {
        "input_tokens": 3,
        "output_tokens": 41,
        "reasoning_tokens": 0,
        "cache_read_tokens": 11_515,
        "cache_write_tokens": 13_835,
        "cache_write_1h_tokens": 0,
    }
    edited = Usage(3, 41, cleared_input_tokens=50_000, cleared_tool_uses=8)
    assert usage_from_json(usage_to_json(edited)) == edited
    assert usage_from_json(usage_to_json(plain)) == plain
