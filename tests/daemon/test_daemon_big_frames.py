"""A 100 MB tool result, sent to the real daemon over its unix socket.

Found: the daemon read every frame whole and parsed it whole, so a 100 MB tool result was
refused (RequestTooLarge, over 64 MiB) and a 30 MB one cost its size several times over. Now a
big frame is parsed as it arrives, its big strings written to a private file, and a tool
result's output goes from there into the store in chunks: the model sees a preview, and
`toolOutput/read` gives back exactly what was sent (the oracle: the file this test wrote).
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.abuse import rss_kib
from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

MB = 1_000_000
PIECE_CHARS = 1 << 20
# Plain log lines, quotes and backslashes (escaped on the wire), accents, CJK, an emoji (a
# surrogate pair when sent as \u escapes): what JSON decoding and chunking must keep exact.
LINES = [
    "src/module_{i:06d}.c:120:7: warning: unused variable 'tmp' [-Wunused-variable]\n",
    'key "{i}" = C:\\path\\to\\file {i}\t\n',
    "café déjà vu {i} — naïve façade\n",
    "日志第{i}行：错误已修复\n",
    "build {i} ok \U0001f600 done\n",
]


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def write_output(path: Path, chars: int, seed: int) -> str:
    """A text of exactly `chars` characters written to `path` (UTF-8); its sha256 ref."""
    rng = random.Random(seed)
    digest = hashlib.sha256()
    written = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        while written < chars:
            block = "".join(rng.choice(LINES).format(i=rng.randrange(10**6)) for _ in range(2000))
            block = block[: chars - written]
            out.write(block)
            digest.update(block.encode())
            written += len(block)
    return "sha256:" + digest.hexdigest()


def file_pieces(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", newline="") as text:
        while piece := text.read(PIECE_CHARS):
            yield piece


def send_tool_result(client: LspClient, msg_id: int, session_id: str, output: Path) -> None:
    """A session/append of one tool result whose output is the file, JSON-encoded piece by
    piece (as ASCII: every non-ASCII character as \\u escapes) and streamed to the socket."""
    head = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "session/append",
            "params": {
                "sessionId": session_id,
                "message": {
                    "role": "tool",
                    "parts": [{"type": "toolResult", "callId": "c1", "name": "Bash", "output": ""}],
                },
            },
        }
    ).encode()
    before, after = head.split(b'"output": ""')
    before += b'"output": "'
    after = b'"' + after
    encoded = [json.dumps(piece)[1:-1].encode() for piece in file_pieces(output)]
    length = len(before) + sum(map(len, encoded)) + len(after)
    client.send_raw(b"Content-Length: %d\r\n\r\n" % length + before)
    for piece in encoded:
        client.send_raw(piece)
    client.send_raw(after)


def reply_to(client: LspClient, msg_id: int, timeout: float) -> dict[str, Any]:
    """The reply to `msg_id` (notifications on the way are passed over)."""
    while "id" not in (message := client.read_message(timeout=timeout)) or message["id"] != msg_id:
        pass
    return message


def test_a_100_mb_tool_result_is_stored_in_chunks_and_read_back_exactly(
    daemons: Daemons, tmp_path: Path
) -> None:
    daemons.serve()
    output = tmp_path / "output.txt"
    chars = 100 * MB
    ref = write_output(output, chars, seed=8)
    client = LspClient.unix(paths.socket_path())
    client.initialize("agent")
    sid = client.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
    call = {"type": "toolCall", "callId": "c1", "name": "Bash", "input": {"command": "make"}}
    client.request(
        "session/append", {"sessionId": sid, "message": {"role": "assistant", "parts": [call]}}
    )
    pid = int(client.request("daemon/status")["result"]["pid"])
    before_kib = rss_kib(pid)

    send_tool_result(client, 7, sid, output)
    reply = reply_to(client, 7, timeout=300)

    assert reply["id"] == 7 and "error" not in reply, reply
    (gated,) = reply["result"]["gated"]
    assert gated["ref"] == ref and gated["originalChars"] == chars
    grown_mb = (rss_kib(pid) - before_kib) / 1024
    assert grown_mb < 50, f"the daemon grew by {grown_mb:.0f} MB"

    # What the model sees: a preview, far under 50,000 characters of the output.
    assembled = client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
    (shown,) = [
        block["content"]
        for m in assembled["result"]["messages"]
        for block in m["content"]
        if block["type"] == "tool_result"
    ]
    first = next(file_pieces(output))
    assert len(shown) <= 50_000 and shown.startswith(first[:2_000]) and ref in shown

    # Slices read back: across chunk boundaries, at the end, and the whole in order.
    text = output.read_text(encoding="utf-8")
    for offset, length in [(0, 10), (PIECE_CHARS - 5, 10), (3 * PIECE_CHARS - 1, 70_000)]:
        got = client.request(
            "toolOutput/read", {"sessionId": sid, "ref": ref, "offset": offset, "length": length}
        )["result"]
        assert got["text"] == text[offset : offset + length] and got["totalChars"] == chars
    tail = client.request(
        "toolOutput/read", {"sessionId": sid, "ref": ref, "offset": chars - 3, "length": 10}
    )["result"]
    assert tail["text"] == text[-3:] and tail["eof"]
    del text
    digest, offset = hashlib.sha256(), 0
    while True:
        got = client.request(
            "toolOutput/read",
            {"sessionId": sid, "ref": ref, "offset": offset, "length": 1_000_000},
            timeout=60,
        )["result"]
        digest.update(got["text"].encode())
        offset += len(got["text"])
        if got["eof"]:
            break
    assert "sha256:" + digest.hexdigest() == ref and offset == chars

    # The store holds it in chunks of about a million characters, not as one value.
    with sqlite3.connect(daemons.base / "tokend.sqlite3") as db:
        chunks = db.execute(
            "SELECT count(*), sum(chars), max(chars) FROM blob_chunks WHERE ref = ?", (ref,)
        ).fetchone()
        inline = db.execute("SELECT length(text), chars FROM tool_outputs").fetchall()
    assert chunks[0] >= 90 and chunks[1] == chars and chunks[2] <= 1.1 * PIECE_CHARS
    assert inline == [(0, chars)]


def test_a_big_frame_with_other_big_strings_is_answered_as_a_small_one(
    daemons: Daemons,
) -> None:
    """Strings that are not tool outputs are read back whole: a 6 MB text echoes intact, and
    a file read (exempt from the gates) of 5 MB is counted whole, as if sent in a small frame."""
    daemons.serve()
    client = LspClient.unix(paths.socket_path())
    client.initialize("agent")
    text = "".join(LINES[i % len(LINES)].format(i=i) for i in range(150_000))
    assert len(text.encode()) > 5 << 20
    window = {"model": "gpt-4o", "contextWindow": 10_000_000}
    sid = client.request("session/create", window)["result"]["sessionId"]
    user = {"role": "user", "parts": [{"type": "text", "text": text}]}
    appended = client.request("session/append", {"sessionId": sid, "message": user}, timeout=120)
    assert "result" in appended, str(appended)[:500]
    assert "gated" not in appended["result"]
    messages = client.request("session/messages", {"sessionId": sid}, timeout=60)["result"]
    (stored,) = messages["messages"]
    assert stored["parts"][0]["text"] == text
    call = {"type": "toolCall", "callId": "r1", "name": "Read", "input": {"file_path": "x"}}
    client.request(
        "session/append", {"sessionId": sid, "message": {"role": "assistant", "parts": [call]}}
    )
    read = {"type": "toolResult", "callId": "r1", "name": "Read", "output": text[:-7]}
    result = client.request(
        "session/append", {"sessionId": sid, "message": {"role": "tool", "parts": [read]}}, 120
    )["result"]
    assert "gated" not in result and result["tokens"] > 1_000_000
