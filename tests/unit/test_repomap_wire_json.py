"""A tag worker's JSON text of a file's tags (adapters.tag_wire.raw_json), what the workspace
cache keeps, is the standard library's text (json.dumps, compact separators, every character
past ASCII and DEL escaped) for any name, reference, import and error, though orjson makes it
(issue 22, first26): the oracle is json.dumps of the cache's fields written out here."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.adapters import tag_wire

TEXT = st.text(
    st.one_of(
        st.sampled_from('aZ_09 "\\/\b\f\n\r\t\x00\x1f\x7f\x80é€\u2028\ud800\udcff'),
        st.characters(),
    ),
    max_size=12,
)


def _cache_text(defs, refs, imports, words, error) -> str:
    fields: dict[str, object] = {"d": [[n, li, t] for n, li, t in defs], "r": dict(refs)}
    if error:
        fields["e"] = error
    if imports:
        fields["i"] = list(imports)
    if words:
        fields["w"] = [list(words), list(words.values())]
    return json.dumps(fields, separators=(",", ":"))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(TEXT, st.integers(0, 1 << 20), TEXT), max_size=6),
    st.dictionaries(TEXT, st.integers(1, 1 << 40), max_size=6),
    st.lists(TEXT, max_size=3).map(tuple),
    st.dictionaries(st.integers(0, (1 << 32) - 1), st.integers(1, 99), max_size=4),
    st.one_of(st.none(), TEXT),
)
def test_the_text_is_the_standard_librarys_for_any_tags(defs, refs, imports, words, error):
    raw = (defs, refs, imports, words, error)
    assert tag_wire.raw_json(raw) == _cache_text(*raw)


def test_the_standard_library_encodes_only_what_orjson_cannot(monkeypatch):
    """Three files of ASCII names: json.dumps is called for none (main: one call a file); a
    name with "é" and one with DEL: once each."""
    calls: list[object] = []
    dumps = json.dumps

    def counted(value: object, **kwargs: object) -> str:
        calls.append(value)
        return dumps(value, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tag_wire.json, "dumps", counted)
    ascii_tags = [
        ([("REG_A", 3, "")], {"u32": 2}, (), {}, None),
        ([], {"helper": 1}, ("linux/x.h",), {7: 2}, None),
        ([], {}, (), {}, "no grammar for cobol"),
    ]
    texts = [tag_wire.raw_json(raw) for raw in ascii_tags]
    assert calls == []
    monkeypatch.setattr(tag_wire.json, "dumps", dumps)
    assert texts == [_cache_text(*raw) for raw in ascii_tags]
    monkeypatch.setattr(tag_wire.json, "dumps", counted)
    for name in ("café", "a\x7fb"):
        assert tag_wire.raw_json(([(name, 1, "")], {}, (), {}, None)) == dumps(
            {"d": [[name, 1, ""]], "r": {}}, separators=(",", ":")
        )
    assert len(calls) == 2
