"""A big body's strings, decoded piece by piece as the bytes arrive, are exactly what
`json.loads` makes of the whole body (the oracle): same text, length and sha256, whatever the
cuts, escapes, surrogate pairs and UTF-8 sequences split between reads."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.daemon import bigframes, bigstrings
from tokend.daemon.bigframes import BodyScanner, BodyTooLarge
from tokend.daemon.bigstrings import SpooledText

# "ud83d" after a backslash: text that looks like an escape on the wire and is not one.
TRICKY = st.sampled_from(
    ["a", '"', "\\", "\n", "\x01", "/", "é", "中", "\U0001f600", "\ud800", "\udc00", "ud83d"]
)


@pytest.fixture(autouse=True)
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few characters: every kind of cut happens within a short string."""
    monkeypatch.setattr(bigframes, "DIVERT_BYTES", 40)
    monkeypatch.setattr(bigstrings, "DECODE_PIECE_BYTES", 32)
    monkeypatch.setattr(bigstrings, "DECODE_PIECE_CHARS", 16)
    monkeypatch.setattr(bigstrings, "KEEP_EDGE_CHARS", 5)


def scan(body: bytes, reads: list[int], limit: int = 1 << 20) -> BodyScanner:
    scanner, pos, i = BodyScanner(limit), 0, 0
    while pos < len(body):
        size = reads[i % len(reads)]
        scanner.feed(body[pos : pos + size])
        pos, i = pos + size, i + 1
    return scanner


def append_body(output: str, text: str, ascii_only: bool) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/append",
        "params": {
            "message": {
                "parts": [
                    {"type": "toolResult", "output": output},
                    {"type": "text", "text": text},
                ],
                text: [text],
            }
        },
    }
    return json.dumps(message, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None)
@given(
    output=st.lists(TRICKY, max_size=200).map("".join),
    text=st.lists(TRICKY, max_size=120).map("".join),
    ascii_only=st.booleans(),
    reads=st.lists(st.integers(1, 50), min_size=1, max_size=8),
)
def test_pieces_decode_as_the_whole_body_does(
    output: str, text: str, ascii_only: bool, reads: list[int]
) -> None:
    body = append_body(output, text, ascii_only)
    expected = json.loads(body)
    scanner = scan(body, reads)
    assert scanner.problem is None
    spooled = scanner.finish(len(body))
    message = spooled.resolve(json.loads(bytes(scanner.skeleton)), 1 << 20)
    got = message["params"]["message"]["parts"][0]["output"]
    want = expected["params"]["message"]["parts"][0]["output"]
    if isinstance(got, SpooledText):
        data = want.encode("utf-8", "surrogatepass")
        assert got.chars == len(want) and got.ref == "sha256:" + hashlib.sha256(data).hexdigest()
        assert "".join(got.pieces()) == want
        assert got.head(3) == want[:3] and got.head(50) == want[:50]
        assert got.tail(3) == want[-3:] and got.tail(50) == want[-50:]
        message["params"]["message"]["parts"][0]["output"] = "".join(got.pieces())
    assert message == expected


@pytest.mark.parametrize(
    ("string", "kind"),
    [
        (b"abc\\x" + b"a" * 80, "Invalid \\escape"),
        (b"a" * 80 + b"\xff\xfe", "not UTF-8"),
        (b"a" * 80 + b"\x01", "Invalid control character"),
    ],
)
def test_a_big_string_that_is_not_json_text_is_told(string: bytes, kind: str) -> None:
    body = b'{"a": "' + string + b'"}'
    with pytest.raises(ValueError):
        json.loads(body)
    scanner = scan(body, [7])
    assert scanner.problem is not None and kind in scanner.problem


def resolved(scanner: BodyScanner, body: bytes, limit: int, way: str) -> Any:
    spooled, skeleton = scanner.finish(len(body)), json.loads(bytes(scanner.skeleton))
    if way == "async":  # as the daemon does: a piece at a time, the loop free between pieces
        return asyncio.run(spooled.resolve_async(skeleton, limit))
    return spooled.resolve(skeleton, limit)


@pytest.mark.parametrize("way", ["sync", "async"])
def test_strings_read_back_count_against_the_limit(way: str) -> None:
    body = json.dumps({"method": "test/echo", "params": {"a": "x" * 500, "b": "y" * 500}}).encode()
    with pytest.raises(BodyTooLarge):
        resolved(scan(body, [64]), body, 900, way)
    assert resolved(scan(body, [64]), body, 1200, way) == json.loads(body)


def test_a_skeleton_over_the_limit_keeps_only_the_id_and_method() -> None:
    body = json.dumps(
        {"params": {"parts": ["z" * 30] * 100}, "method": "test/echo", "id": "late"}
    ).encode()
    scanner = scan(body, [100], limit=1000)
    assert scanner.too_large and len(scanner.skeleton) == 0
    assert scanner.fields.msg_id == "late" and scanner.fields.method == "test/echo"


@pytest.mark.parametrize(
    "unit",
    ["\\", "\ud800", "\U0001f600", "\\ud83d", '"', "中", "a\n"],
    ids=["backslashes", "high-surrogates", "pairs", "fake-escapes", "quotes", "cjk", "lines"],
)
def test_long_runs_of_one_escape_decode_as_the_whole_body_does(
    monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    """Real piece sizes, and a string that is one unit repeated for megabytes: every cut falls
    in a run of escapes (a run of backslashes, high surrogates with no partner)."""
    monkeypatch.setattr(bigframes, "DIVERT_BYTES", 64 << 10)
    monkeypatch.setattr(bigstrings, "DECODE_PIECE_BYTES", 256 << 10)
    monkeypatch.setattr(bigstrings, "DECODE_PIECE_CHARS", 1 << 20)
    output = unit * (3_000_000 // len(unit)) + "end"
    body = append_body(output, "short", ascii_only=True)
    scanner = scan(body, [65_536, 262_144, 100_003])
    assert scanner.problem is None
    message = scanner.finish(len(body)).resolve(json.loads(bytes(scanner.skeleton)), 1 << 20)
    got = message["params"]["message"]["parts"][0]["output"]
    want = json.loads(body)["params"]["message"]["parts"][0]["output"]
    assert isinstance(got, SpooledText) and got.chars == len(want)
    assert "".join(got.pieces()) == want
    assert message["params"]["message"]["parts"][1]["text"] == "short"


@pytest.mark.parametrize("read", [1, 7, 40, 41, 1000, 65_536])
def test_a_body_of_many_short_strings_is_kept_as_it_came(read: int) -> None:
    """Many short strings (a glob's 20,000 paths, some with escapes, one past DIVERT_BYTES):
    the skeleton is the body with the long one replaced, whatever the pieces."""
    paths = [f"src/pkg_{i % 97}/módulo_{i}.py" for i in range(20_000)]
    for i in range(0, 20_000, 7):  # escaped quotes, and backslashes before a closing quote
        paths[i] = f'C:\\d\\"{i}"\\' if i % 2 else f'\\\\"x{i}\\\\'
    paths[12_000] = "long " * 20  # 100 characters: past DIVERT_BYTES (40 here)
    call = {"type": "toolCall", "callId": "c", "name": "Glob", "input": {"files": paths}}
    message = {"role": "assistant", "parts": [call]}
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/append", "params": message})
    data = body.encode()
    scanner = scan(data, [read])
    assert scanner.problem is None and not scanner.too_large
    assert len(scanner.finish(len(data))) == 1  # the long path only
    assert resolved(scan(data, [read]), data, 1 << 30, "sync") == json.loads(data)
