"""service.session.turns: a session's appends are applied in the order their turns were taken, whatever
order their slow parts finish in; a turn that ends early never lets a later one overtake an
earlier one; a cancel reaching a write its thread has started is dropped and its result
returned, one reaching a queued write takes it off the queue."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tokend.service.session.turns import Turns, committed, run_to_end


def test_turns_apply_in_the_order_taken_whatever_order_the_work_finishes_in():
    async def scenario() -> list[int]:
        turns, applied = Turns(), []

        async def append(n: int, work_s: float) -> None:
            turn = turns.take()
            try:
                await asyncio.sleep(work_s)  # the count, slowest first
                await turn.wait()
                applied.append(n)
            finally:
                turn.release()

        await asyncio.gather(*(append(n, 0.05 - n * 0.01) for n in range(5)))
        return applied

    assert asyncio.run(scenario()) == [0, 1, 2, 3, 4]


def test_a_turn_cancelled_while_waiting_does_not_let_the_next_overtake_the_one_before():
    async def scenario() -> list[str]:
        turns, applied = Turns(), []
        gate = asyncio.Event()

        async def append(name: str, hold: bool) -> None:
            turn = turns.take()
            try:
                await turn.wait()
                if hold:
                    await gate.wait()  # the first is still being applied
                applied.append(name)
            finally:
                turn.release()

        first = asyncio.ensure_future(append("first", True))
        second = asyncio.ensure_future(append("second", False))
        third = asyncio.ensure_future(append("third", False))
        await asyncio.sleep(0.01)
        second.cancel()
        await asyncio.sleep(0.01)
        assert applied == []  # the third still waits for the first
        gate.set()
        await asyncio.gather(first, third)
        assert second.cancelled()
        return applied

    assert asyncio.run(scenario()) == ["first", "third"]


def test_a_cancel_during_a_commit_is_dropped_and_the_result_returned():
    async def scenario() -> tuple[str, bool]:
        async def commit() -> str:
            await asyncio.sleep(0.05)
            return "committed"

        async def request() -> str:
            await asyncio.sleep(0)  # before the commit point a cancel raises here
            return await run_to_end(commit())

        task = asyncio.ensure_future(request())
        await asyncio.sleep(0.01)
        task.cancel()
        return await task, task.cancelled()

    assert asyncio.run(scenario()) == ("committed", False)


def test_a_cancel_before_the_commit_point_raises_and_nothing_runs():
    async def scenario() -> list[str]:
        ran: list[str] = []

        async def commit() -> None:
            ran.append("commit")

        async def request() -> None:
            await asyncio.sleep(1)
            await run_to_end(commit())

        task = asyncio.ensure_future(request())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return ran

    assert asyncio.run(scenario()) == []


def test_a_write_cancelled_while_queued_never_runs_and_one_cancelled_while_running_finishes():
    pool = ThreadPoolExecutor(max_workers=1)
    running, release = threading.Event(), threading.Event()
    written: list[str] = []

    def write(name: str) -> str:
        running.set()
        release.wait(10)
        written.append(name)
        return name

    async def scenario() -> tuple[str, bool]:
        first = asyncio.ensure_future(committed(pool.submit, lambda: write("first")))
        second = asyncio.ensure_future(committed(pool.submit, lambda: write("second")))
        while not running.is_set():
            await asyncio.sleep(0.005)
        first.cancel()  # its thread is writing: too late
        second.cancel()  # still queued behind it: taken off the queue
        await asyncio.sleep(0.01)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await second
        return await first, first.cancelled()

    try:
        assert asyncio.run(scenario()) == ("first", False)
    finally:
        pool.shutdown(wait=True)
    assert written == ["first"]
