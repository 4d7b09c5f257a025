"""The first `context/assemble` after a restart reads a long session's bodies and renders them
beside the event loop (issue 22): another connection's `budget/snapshot` of the same session is
answered meanwhile. A real `tokend serve` of this tree on a private socket and SQLite file
(bench/scale_assemble.py's daemon and measure), stopped and started again on the same file.

Judged by order, not by a clock: snapshots answered before the assemble's reply began. A guard
(main read the bodies in a worker thread too); tests/service/test_lazy_appends.py shows the
append that read them on the loop. Oracle for the reply: the assemble before the restart."""

from __future__ import annotations

from bench.append_order import ROOT, Daemon
from bench.scale_assemble import _cold_beside
from bench.scale_session import MODEL, WINDOW, _restart, pipelined, short_turns

MESSAGES = 2_000


def test_a_snapshot_is_answered_while_the_first_assemble_after_a_restart_runs() -> None:
    daemon = Daemon(ROOT)
    try:
        client = daemon.client("agent")
        sid = client.request("session/create", {"model": MODEL, "contextWindow": WINDOW})
        sid = sid["sessionId"]
        assert pipelined(client, sid, short_turns(MESSAGES))[1] == 0
        params = {"sessionId": sid, "format": "openai", "system": "You are a careful engineer."}
        before = client.request("context/assemble", params)
        client.close()
        _restart(daemon)
        agent, editor = daemon.client("agent"), daemon.client("editor")
        _, after, snapshots = _cold_beside(agent, editor, params)
        assert after == before
        assert len(snapshots) >= 2, "no snapshot was answered before the assemble's reply"
        agent.close()
        editor.close()
    finally:
        daemon.stop()
