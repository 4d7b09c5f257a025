"""encode_message and core.json_text.dumps write what json.dumps writes, a piece at a time
(lsp/encode.py, core/json_text.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core import json_text as encode
from tokend.core.json_text import dumps, is_small
from tokend.lsp.encode import encode_message


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


def _make_pieces_tiny(patch: pytest.MonkeyPatch) -> None:
    """Pieces and smallness at a few characters, so that small values take the piece path."""
    patch.setattr(encode, "PIECE_CHARS", 3)
    patch.setattr(encode, "SMALL_CHARS", 4)
    patch.setattr(encode, "SMALL_VALUES", 3)


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    _make_pieces_tiny(monkeypatch)


@settings(max_examples=120, deadline=None)
@given(value=json_values)
def test_the_pieces_are_what_json_dumps_writes(value: Any) -> None:
    with pytest.MonkeyPatch.context() as patch:
        _make_pieces_tiny(patch)
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


@settings(max_examples=120, deadline=None)
@given(value=json_values)
def test_compact_unicode_pieces_are_what_json_dumps_writes(value: Any) -> None:
    """As tool inputs are rendered for counting (core/counting/render.py's to_json_text)."""
    with pytest.MonkeyPatch.context() as patch:
        _make_pieces_tiny(patch)
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        assert dumps(value, ensure_ascii=False, separators=(",", ":")) == expected


def test_a_value_json_cannot_write_is_refused_as_json_dumps_refuses_it() -> None:
    with pytest.raises(TypeError):
        dumps({"a": ["x" * 10, {1, 2}]})
    with pytest.raises(TypeError):
        json.dumps({"a": ["x" * 10, {1, 2}]})


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_small_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    """core.json_text.small_dumps, one C encoder made once (the render cache's messages)."""
    assert encode.small_dumps(value) == json.dumps(value, allow_nan=False)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, [1.0, {"x": math.nan}]])
def test_small_dumps_refuses_what_json_dumps_refuses(bad: Any) -> None:
    with pytest.raises(ValueError):
        json.dumps(bad, allow_nan=False)
    with pytest.raises(ValueError):
        encode.small_dumps(bad)
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode.small_dumps({"point": Point(1, "a")})
