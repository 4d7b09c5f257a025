"""encode_message writes what json.dumps writes, a piece at a time (lsp/encode.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.lsp import encode
from tokend.lsp.encode import encode_message, is_small


@attrs.define
class Point:
    x: int
    label: str


def _serialize(value: Any) -> Any:
    return attrs.asdict(value)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces and smallness at a few characters, so that small values take the piece path."""
    monkeypatch.setattr(encode, "PIECE_CHARS", 3)
    monkeypatch.setattr(encode, "SMALL_CHARS", 4)
    monkeypatch.setattr(encode, "SMALL_VALUES", 3)


@settings(max_examples=120, deadline=None)
@given(value=json_values)
def test_the_pieces_are_what_json_dumps_writes(value: Any) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encode, "PIECE_CHARS", 3)
        patch.setattr(encode, "SMALL_CHARS", 4)
        patch.setattr(encode, "SMALL_VALUES", 3)
        assert encode_message(value, _serialize) == json.dumps(value).encode()


def test_an_8_mb_string_and_attrs_values(tiny_pieces: None) -> None:
    text = 'naïve 😀 "quoted" \\ \u2028 \x00 ' * 1000
    message = {"id": 1, "result": {"system": [text], "point": Point(3, text[:50]), 7: True}}
    expected = json.dumps(message, default=_serialize).encode()
    assert encode_message(message, _serialize) == expected


def test_nan_is_refused(tiny_pieces: None) -> None:
    with pytest.raises(ValueError):
        encode_message({"a": ["x" * 10, math.nan]}, _serialize)


def test_small_is_looked_at_only_so_far() -> None:
    assert is_small({"id": 1, "result": {"a": "x" * 100}}, _serialize)
    assert not is_small({"result": "x" * (encode.SMALL_CHARS + 1)}, _serialize)
    assert not is_small(list(range(encode.SMALL_VALUES + 1)), _serialize)
    assert not is_small({"p": Point(1, "y" * (encode.SMALL_CHARS + 1))}, _serialize)
