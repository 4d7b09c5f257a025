"""Found (issue 22): after a restart, a session's `budget/snapshot` was not the one its clients
had before (`lastCall.errorPct` became null: a reloaded call lost the error of the prediction
it was checked against). A real `tokend serve` of this tree on a private socket and SQLite file
(bench/scale_session.py's daemon and messages), stopped and started again on the same file.
Oracles: what the first daemon answered, against what the restarted one answers."""

from __future__ import annotations

from bench.append_order import ROOT, Daemon
from bench.scale_session import MODEL, WINDOW, _restart, pipelined, short_turns, tool_exchange


def test_a_session_reads_the_same_after_a_restart():
    daemon = Daemon(ROOT)
    try:
        client = daemon.client("before")
        sid = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})
        sid = sid["sessionId"]
        _, errors = pipelined(client, sid, tool_exchange(0, 60) + short_turns(41))
        assert errors == 0
        params = {"sessionId": sid, "format": "openai", "system": "You are a careful engineer."}
        assembled = client.request("context/assemble", params)
        before = client.request("budget/snapshot", {"sessionId": sid})
        client.close()
        _restart(daemon)
        client = daemon.client("after")
        after = client.request("budget/snapshot", {"sessionId": sid})
        assert before["lastCall"]["errorPct"] is not None
        # `secondsLeft` is as of the moment each snapshot is sent; the rest must not move.
        assert before["promptCache"] is not None
        assert before["promptCache"].pop("secondsLeft") >= after["promptCache"].pop("secondsLeft")
        assert after == before
        assert client.request("context/assemble", params) == assembled
        client.close()
    finally:
        daemon.stop()
