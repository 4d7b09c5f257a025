"""A Bash call whose command is one 8 MiB word (a base64 blob) in a session handed off through
tokend's server (in the test's process, tests/in_process.py): the artifact index (linear now; shlex was quadratic and held a worker for more than 20
minutes) finds the file the command deleted, and the handoff answers."""

from __future__ import annotations

import pytest

from tests.daemon.real_daemon import real_daemons


def test_a_handoff_indexes_an_8_mib_one_word_command(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = "QUJD" * (2 * 1024 * 1024)  # 8 MiB of base64, one word
    command = f"echo {blob} | base64 -d > out.bin && rm -f stale.bin"
    with real_daemons(monkeypatch) as daemons:
        client = daemons.standalone()
        assert "result" in client.initialize("agent")
        window = {"model": "gpt-4o", "contextWindow": 10_000_000}  # room for the 8 MiB call
        created = client.request("session/create", window)["result"]
        session_id = created["sessionId"]
        call = {"type": "toolCall", "callId": "c1", "name": "Bash", "input": {"command": command}}
        result = {"type": "toolResult", "callId": "c1", "name": "Bash", "output": "done"}
        for role, part in (
            ("user", {"type": "text", "text": "unpack the blob, drop the stale file"}),
            ("assistant", call),
            ("tool", result),
        ):
            message = {"role": role, "parts": [part]}
            reply = client.request(
                "session/append", {"sessionId": session_id, "message": message}, timeout=120
            )
            assert "result" in reply, reply
        # A generous limit: a return to quadratic splitting takes tens of minutes here.
        handed = client.request(
            "session/handoff", {"sessionId": session_id, "goal": "carry on"}, timeout=300
        )
        child = handed["result"]["sessionId"]
        listed = client.request("session/messages", {"sessionId": child}, timeout=60)["result"]
        summary = str(listed["messages"][0])
        assert "stale.bin" in summary, summary[:2000]
