"""adapters.rendezvous.loads (the status line's JSON without importing json) reads what
json.loads reads, and refuses what it refuses."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokend.adapters.rendezvous import loads

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=30,
)


@given(values, st.booleans(), st.sampled_from(["", " ", "\n", " \r\n\t"]))
def test_loads_reads_what_json_reads(value: Any, ascii_only: bool, space: str) -> None:
    text = space + json.dumps(value, ensure_ascii=ascii_only, indent=2 if ascii_only else None)
    assert loads(text + space) == json.loads(text + space)


@pytest.mark.parametrize(
    "text", ["", "   ", "{", '{"a" 1}', '"abc', "[1,", "{} x", "nul", "{'a': 1}", "[1] [2]"]
)
def test_loads_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads(text)


def test_constants_as_json_reads_them() -> None:
    value = loads('[NaN, Infinity, -Infinity, 1e400, "\\ud83d\\ude00"]')
    assert math.isnan(value[0]) and value[1:4] == [math.inf, -math.inf, math.inf]
    assert value[4] == "\U0001f600"
