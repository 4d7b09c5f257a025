"""A big buffer's tags are read a level of the tree at a time (tree-sitter runs a query holding
the GIL: one call over 8 MB held the event loop 0.35 s), and the result is the one a single
query over the whole source gives: every definition and reference, each once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokend.adapters.tags import parser

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("language", "suffix"), [("python", "py"), ("c", "c")])
def test_tags_read_in_pieces_are_the_tags_read_at_once(
    language: str, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if language == "python":
        source = b"".join(p.read_bytes() for p in sorted((ROOT / "server").rglob("*.py")))
    else:  # nested: a big struct holding functions' prototypes, a big function
        body = "".join(f"  int field_{i}; void (*hook_{i})(int);\n" for i in range(8000))
        calls = "".join(f"  helper_{i % 50}(x + {i});\n" for i in range(8000))
        source = f"struct big {{\n{body}}};\nint run(int x) {{\n{calls}  return x;\n}}\n".encode()
    assert len(source) > 64 * (4 << 10)
    monkeypatch.setattr(parser, "CAPTURE_BYTES", 1 << 40)
    at_once = parser.TagParser().tags(language, source)
    monkeypatch.setattr(parser, "CAPTURE_BYTES", 4 << 10)  # many levels, many pieces
    in_pieces = parser.TagParser().tags(language, source)
    assert at_once.error is None and len(at_once.definitions) + len(at_once.references) > 40
    assert in_pieces == at_once
