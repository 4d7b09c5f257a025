"""Found (issue 26): pipelined appends were applied in the order their counting finished, not the
order they were sent (a tool result pipelined right behind its tool call was refused), and a
cancelled append was written anyway (RequestCancelled, yet stored; budget/snapshot one version
behind the store). Each test runs a real `tokend serve` of this tree on a private socket and
SQLite file (bench/append_order.py, the benchmark's runs with fewer appends, judged without
timing). Oracles: what the client sent and received, against `session/messages` after a
`session/reload` (the store) and `budget/snapshot` (the daemon's state)."""

from __future__ import annotations

from bench.append_order import (
    REQUEST_CANCELLED,
    ROOT,
    Daemon,
    _big_output,
    _index,
    _replies,
    cancels,
    pipelined,
)


def test_500_appends_with_16_in_flight_are_stored_in_the_order_they_were_sent():
    result = pipelined(ROOT, 500, in_flight=16)
    assert result.errors == []  # every toolResult right behind its toolCall accepted
    assert result.stored == 500
    assert (result.out_of_place, result.inversions) == (0, 0)


def test_a_cancelled_append_either_wins_and_writes_nothing_or_loses_and_is_answered():
    result = cancels(ROOT, 30)
    assert result.lies == []
    assert result.cancelled + result.completed == 30
    assert result.cancelled > 0, "no cancel arrived in time: the test proved nothing"


def test_an_append_cancelled_while_waiting_behind_a_big_one_writes_nothing_and_keeps_order():
    daemon = Daemon(ROOT)
    try:
        client = daemon.client("agent")
        sid = client.request("session/create", {"model": "gpt-4o", "contextWindow": 1_000_000})[
            "sessionId"
        ]
        call = {"type": "toolCall", "callId": "r1", "name": "Read", "input": {"file_path": "x"}}
        first = {"role": "assistant", "parts": [call]}
        version = client.request("session/append", {"sessionId": sid, "message": first})["version"]
        big = {
            "type": "toolResult",
            "callId": "r1",
            "name": "Read",
            "output": _big_output(1, 40_000),
        }
        small = [
            {"role": "user", "parts": [{"type": "text", "text": f"#{i:06d} next"}]}
            for i in (2, 3, 4)
        ]
        ids = [
            client.start_request(
                "session/append", {"sessionId": sid, "message": {"role": "tool", "parts": [big]}}
            )
        ]
        ids += [
            client.start_request("session/append", {"sessionId": sid, "message": m}) for m in small
        ]
        client.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": ids[2]}})
        replies = _replies(client, ids)
        snapshot = client.request("budget/snapshot", {"sessionId": sid})["version"]
        reloaded = client.request("session/reload", {"sessionId": sid})["version"]
        listed = client.request("session/messages", {"sessionId": sid})["messages"]
        client.close()
    finally:
        daemon.stop()
    assert replies[2]["error"]["code"] == REQUEST_CANCELLED  # counted, waiting for the big one
    answered = [replies[i]["result"]["version"] for i in (0, 1, 3)]
    assert answered == [version + 1, version + 2, version + 3]  # no gap where #3 would be
    assert [_index(m) for m in listed[1:]] == [1, 2, 4]
    assert snapshot == reloaded == version + 3  # fmt: skip
