"""Group commit of a session's appends (issue 22: on PostgreSQL each append's transaction was a
string of round trips to a server on the same cores, one append at a time).

An append whose turn came (service.session.turns) joins the session's queue and gives up its
turn: the next append may queue behind it at once. While no batch is being written, a task
takes every append queued, checks and evolves them in order (each against the data the ones
before it left), and commits them all in ONE transaction (Store.commit_changes); then publishes
them in order and answers each. So every append is still answered only after its commit, in
the order sent, each checked as if alone (a refused one gives up its place; the others go on).

Cancelling: an append cancelled while it waits in the queue is taken out: nothing written. Once
its batch is formed its write has begun: it is finished and its result returned (protocol.md,
Cancelling). A batch the store refuses (another daemon moved the session, an id already
stored, a failed write) wrote nothing: its appends are then applied one by one as alone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokend.core.commit import SessionCommit
from tokend.core.session.changes import Change
from tokend.core.session.data import SessionData
from tokend.service.session.applied import Applied
from tokend.service.session.turns import Submit, committed, uncancel


class SessionState(Protocol):
    """What the queue uses of its session's state (service.session.state.SessionState)."""

    lock: asyncio.Lock

    @property
    def data(self) -> SessionData: ...

    def check_version(self, if_version: int | None, data: SessionData | None = None) -> None: ...

    def evolve(
        self, change: Change, before: SessionData | None = None
    ) -> tuple[Applied, SessionCommit]: ...

    def commit_together(self, commits: list[SessionCommit]) -> None: ...

    def publish(self, applied: Applied, change: Change) -> Applied: ...

    async def apply_locked(
        self, change: Change, if_version: int | None, submit: Submit[Any]
    ) -> Applied: ...


Check = Callable[[SessionData], None]  # raises when the append may not follow `data`


@dataclass(eq=False)
class _Queued:
    change: Change
    check: Check
    if_version: int | None
    answer: asyncio.Future[Applied]
    taken: bool = field(default=False)  # in a batch being written


class AppendQueue:
    """A session's appends waiting to be committed together (one per SessionState)."""

    def __init__(self, state: SessionState) -> None:
        self._state = state
        self._queued: list[_Queued] = []
        self._writer: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        """How many appends wait in the queue (not yet in a batch)."""
        return len(self._queued)

    async def apply(
        self,
        change: Change,
        check: Check,
        if_version: int | None,
        submit: Submit[Any],
        queued: Callable[[], None],
    ) -> Applied:
        """Apply `change` with the appends queued beside it; `queued` is called once it is in
        the queue (the caller gives up its turn there)."""
        loop = asyncio.get_running_loop()
        entry = _Queued(change, check, if_version, loop.create_future())
        self._queued.append(entry)
        queued()
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_all(submit))
        cancelled = 0
        try:
            while True:
                try:
                    return await asyncio.shield(entry.answer)
                except asyncio.CancelledError:
                    if entry.answer.cancelled() or not entry.taken:
                        if entry in self._queued:
                            self._queued.remove(entry)
                        raise
                    cancelled += 1  # its write has begun: wait for it (again)
        finally:
            uncancel(cancelled)

    async def _write_all(self, submit: Submit[Any]) -> None:
        try:
            while self._queued:
                async with self._state.lock:
                    batch, self._queued = self._queued, []
                    await self._write(batch, submit)
        finally:
            for entry in self._queued:  # the loop stops: nobody will write them
                entry.answer.cancel()

    async def _write(self, batch: list[_Queued], submit: Submit[Any]) -> None:
        state = self._state
        if len(batch) == 1:  # alone: as apply_async (evolved once: a log grows in place)
            batch[0].taken = True
            await _answer(batch[0], _alone(state, batch[0], submit))
            return
        formed: list[tuple[_Queued, Applied, Any]] = []
        data = state.data
        for entry in batch:
            try:
                entry.check(data)
                state.check_version(entry.if_version, data)
                applied, commit = state.evolve(entry.change, data)
            except Exception as exc:
                entry.answer.set_exception(exc)
                continue
            entry.taken = True
            formed.append((entry, applied, commit))
            data = applied.evolved.data
        if not formed:
            return
        commits = [commit for _, _, commit in formed]
        try:
            await committed(submit, lambda: state.commit_together(commits))
        except Exception:  # nothing written: each one as alone, in order (rare: evolved again,
            # a lazily loaded log is read then)
            for entry, _, _ in formed:
                await _answer(entry, _alone(state, entry, submit))
            return
        for entry, applied, _ in formed:
            entry.answer.set_result(state.publish(applied, entry.change))


async def _alone(state: SessionState, entry: _Queued, submit: Submit[Any]) -> Applied:
    entry.check(state.data)
    return await state.apply_locked(entry.change, entry.if_version, submit)


async def _answer(entry: _Queued, work: Any) -> None:
    try:
        entry.answer.set_result(await work)
    except Exception as exc:
        entry.answer.set_exception(exc)
    except BaseException:  # the loop stops
        entry.answer.cancel()
        raise
