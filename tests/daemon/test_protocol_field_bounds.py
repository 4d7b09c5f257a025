"""Fields that have no business being megabytes are bounded: on the real `tokend serve` for
the big bodies its frame reader takes as they arrive, in the test's process for the rest.

Found (issue 17's fuzz): an 8 MB session `title`, handoff `goal`, `model`, path or id was taken,
copied, encoded and stored on the event loop (the good connection waited 0.2-0.9 s per case), and
a title or a goal then stayed in memory for as long as its session. Each is now refused with
InvalidParams naming the field and its bound (lsp.strict.FIELD_CHARS, listed in protocol.md),
for a body parsed whole and for a big one whose long strings go to a file as they arrive (the
bound is checked before such a string is read back). Nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.core.errors import InvalidParams
from tokend.daemon import paths

INVALID_PARAMS = InvalidParams.code
BIG = 8 << 20  # over the daemon's 4 MiB: read as it arrives, its long strings to a file


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _client(daemons: Daemons, *, big_frames: bool) -> LspClient:
    """The real `tokend serve` where the daemon's own frame reader is tested (bodies over its
    4 MiB, read as they arrive); else `tokend lsp --standalone`'s server in the test's process
    (tests/in_process.py): the same handlers check the same bounds on a body parsed whole."""
    client: LspClient
    if big_frames:
        daemons.serve()
        client = LspClient.unix(paths.socket_path())
    else:
        client = daemons.standalone()
    assert "result" in client.initialize("bounds")
    return client


@pytest.mark.parametrize("chars", [5_000, BIG], ids=["5,000 chars", "8 MiB"])
def test_overlong_titles_goals_models_ids_and_paths_are_refused(
    daemons: Daemons, tmp_path: Path, chars: int
) -> None:
    client = _client(daemons, big_frames=chars == BIG)
    created = client.request("session/create", {"model": "gpt-4o", "title": "kept"})
    session_id = created["result"]["sessionId"]
    long = "t" * chars
    cases = [
        ("session/create", {"model": "gpt-4o", "title": long}, "title", 1_024),
        ("session/create", {"model": "m" * chars}, "model", 256),
        ("session/rename", {"sessionId": session_id, "title": long}, "title", 1_024),
        ("session/fork", {"sessionId": session_id, "title": long}, "title", 1_024),
        ("budget/snapshot", {"sessionId": "s" * chars}, "sessionId", 256),
        ("files/add", {"sessionId": session_id, "paths": ["a.py", long]}, "paths[1]", 4_096),
        ("toolOutput/read", {"sessionId": session_id, "ref": long}, "ref", 256),
    ]
    if chars > 16_384:
        cases.append(("session/handoff", {"sessionId": session_id, "goal": long}, "goal", 16_384))
    for method, params, field, bound in cases:
        reply = client.request(method, params, timeout=60)
        error = reply.get("error", {})
        assert error.get("code") == INVALID_PARAMS, (method, field, json.dumps(reply)[:300])
        assert error["message"] == (
            f"invalid params: {field} is {chars:,} characters long; it holds at most {bound:,}"
        )
    listed = client.request("session/list", {"all": True})["result"]["sessions"]
    assert [s["title"] for s in listed] == ["kept"]  # nothing created, renamed or forked


def test_bounds_leave_free_form_json_and_long_texts_alone(daemons: Daemons) -> None:
    client = _client(daemons, big_frames=False)
    title = "a title of exactly the bound " + "x" * (1_024 - 29)
    created = client.request("session/create", {"model": "gpt-4o", "title": title})
    session_id = created["result"]["sessionId"]
    call = {"type": "toolCall", "callId": "c1", "name": "write",
            "input": {"title": "y" * 20_000, "path": "z" * 5_000}}  # fmt: skip
    for message in [
        {"role": "user", "parts": [{"type": "text", "text": "w " * 40_000}]},
        {"role": "assistant", "parts": [call]},
    ]:
        reply = client.request("session/append", {"sessionId": session_id, "message": message})
        assert "result" in reply, json.dumps(reply)[:300]
    messages = client.request("session/messages", {"sessionId": session_id})["result"]
    stored = json.dumps(messages)
    assert "y" * 20_000 in stored and "w " * 40_000 in stored
    listed = client.request("session/list", {"all": True})["result"]["sessions"]
    assert [s["title"] for s in listed] == [title]
