"""core/excerpt.py: what tokend echoes of a client's values is short, and says what it cut."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tokend.core.excerpt import EXCERPT_CHARS, bounded, excerpt


@given(st.text(max_size=400) | st.integers() | st.lists(st.integers(), max_size=60))
def test_an_excerpt_is_never_longer_than_its_limit(value: object) -> None:
    assert len(excerpt(value)) <= EXCERPT_CHARS


@given(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=39))
def test_a_short_string_is_shown_whole_as_json(value: str) -> None:
    assert json.loads(excerpt(value)) == value


def test_a_long_string_keeps_its_head_and_says_its_length() -> None:
    shown = excerpt("S" * (8 << 20))
    assert shown.startswith('"SSSS') and shown.endswith('…" (8,388,608 chars)')
    assert excerpt("\ud800") == '"\\ud800"'  # escaped, never raw


@given(st.text(min_size=3000, max_size=5000))
def test_a_bounded_message_keeps_head_and_tail(text: str) -> None:
    cut = bounded(text, 2000)
    assert len(cut) < 2100
    assert cut.startswith(text[:1000]) and cut.endswith(text[-400:])
