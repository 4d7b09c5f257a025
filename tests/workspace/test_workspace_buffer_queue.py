"""The editors' buffers are applied off the loop in order, once per burst, the latest text only;
`settle` waits for what was sent before it."""

from __future__ import annotations

import threading

from tokend.service.workspace.buffers import BufferQueue


def _blocked_queue() -> tuple[BufferQueue, list[tuple[str, str | None]], threading.Event]:
    """A queue whose first put is being applied, held at `gate` (a big buffer being tagged)."""
    applied: list[tuple[str, str | None]] = []
    gate, started = threading.Event(), threading.Event()

    def apply(rel: str, text: str | None) -> None:
        started.set()
        gate.wait(10)
        applied.append((rel, text))

    queue = BufferQueue(apply, threading.Event())
    queue.put("first.py", "busy")
    assert started.wait(10)
    return queue, applied, gate


def test_a_burst_is_applied_once_with_its_latest_text_and_a_close_ends_it() -> None:
    queue, applied, gate = _blocked_queue()
    for version in range(20):
        queue.put("b.py", f"b{version}")
        queue.put("a.py", f"a{version}")
    queue.put("a.py", None)  # closed after its changes
    assert queue.busy(["a.py"]) and queue.busy(["b.py"])
    gate.set()
    queue.settle(timeout=10)
    assert not queue.busy()
    assert applied == [("first.py", "busy"), ("b.py", "b19"), ("a.py", None)]


def test_settle_waits_for_the_documents_asked_for() -> None:
    queue, applied, gate = _blocked_queue()
    queue.put("a.py", "one")
    waiter = threading.Thread(target=queue.settle, args=(["a.py"], 10))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and applied == []  # a.py's buffer waits behind first.py's
    queue.settle(["other.py"], 10)  # nothing pending there: returns at once
    gate.set()
    waiter.join(10)
    assert not waiter.is_alive() and applied == [("first.py", "busy"), ("a.py", "one")]


def test_nothing_is_applied_once_the_workspace_is_closed() -> None:
    queue, applied, gate = _blocked_queue()
    queue.put("a.py", "one")
    queue.put("b.py", "two")
    queue.close()
    queue.put("c.py", "three")
    gate.set()
    queue.settle(timeout=10)
    assert applied == [("first.py", "busy")]


def test_a_request_cancelled_while_it_waits_leaves_the_buffer_to_be_applied() -> None:
    import asyncio
    from types import SimpleNamespace
    from typing import Any

    from tokend.service.workspace.registry import Workspaces

    queue, applied, gate = _blocked_queue()
    queue.put("a.py", "one")  # queued behind first.py's

    async def cancel_a_waiting_request() -> None:
        index: Any = SimpleNamespace(buffers=queue)
        waiting = asyncio.ensure_future(Workspaces.settled(None, index, ["a.py"]))  # type: ignore[arg-type]
        await asyncio.sleep(0.1)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)

    asyncio.run(cancel_a_waiting_request())
    gate.set()
    queue.settle(timeout=10)
    assert applied == [("first.py", "busy"), ("a.py", "one")]
