"""Estimate first, exact later: a big text for a model whose exact count is slow (a Claude
family: ~1 s per MB) is appended with its family's estimate, and the exact count is made in a
worker afterwards and applied as a change (core.session.changes.CountsUpgraded) through the session's
owner: stored, and heard by listeners as budget/didChange. Nothing waits behind it: the append
answers at once, and later appends are neither held nor reordered. The estimate learns from each
exact count that lands (core.counting.calibration). Short texts, messages that
carry a provider call, and messages whose estimate comes near the input limit are counted
exactly inline, as before."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from tokend.core.counting.calibration import Calibrator
from tokend.core.counting.render import part_text
from tokend.core.session.changes import AppendMessage, CountsUpgraded, PartCounts
from tokend.core.types import Message, Part, Role, StoredPart, Usage
from tokend.service.counting.counter import ModelCounter
from tokend.service.session.state import Applied, SessionState
from tokend.service.session.turns import Submit

log = logging.getLogger(__name__)

BIG_TEXT_CHARS = 64 * 1024  # below this, the exact count is quick enough to give at once
NEAR_LIMIT = 0.8  # an estimate above this share of the input limit is counted exactly at once

Run = Callable[[Callable[[], PartCounts]], Awaitable[PartCounts]]
Estimate = PartCounts | None  # what an exact count upgrades: an append's estimate (learnt from)


def first_counts(
    counter: ModelCounter,
    role: Role,
    parts: Sequence[Part],
    usage: Usage | None,
    limit: int,
    *,
    later: bool,
) -> PartCounts:
    """The counts an append answers with: exact, or (when the exact count can come `later`)
    for a big text of a slow exact tokenizer its estimate (`estimated`; its `raw_text` is what
    calibration learns from once the exact count lands)."""
    big = sum(len(part_text(p)) for p in parts) > BIG_TEXT_CHARS
    if later and counter.slow_exact and big and usage is None:
        estimate = counter.estimate_first().count_parts(role, parts, for_learning=False)
        if estimate.total <= NEAR_LIMIT * limit:
            return replace(estimate, estimated=True)
    return counter.count_parts(role, parts, stop_above=limit)


def loaded_counts(
    counter: ModelCounter,
    role: Role,
    parts: Sequence[StoredPart],
    *,
    for_learning: bool,
    later: bool,
) -> PartCounts:
    """A stored message's counts as a session loads. A big text the store has no count for (its
    exact count was under way when a daemon was killed) gets its family's estimate when its
    count can come `later` and the load runs on the event loop (`estimated`: counted off the
    loop by CountUpgrades.resume); any other missing count is made here."""
    if later and counter.slow_exact and _on_loop():
        missing = (sp for sp in parts if sp.tokens is None and sp.compacted_at is None)
        if sum(len(part_text(sp.part)) for sp in missing) > BIG_TEXT_CHARS:
            estimate = counter.estimate_first().stored_counts(role, parts)
            return replace(estimate, estimated=True)
    return counter.stored_counts(role, parts, for_learning=for_learning)


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class CountUpgrades:
    """The exact counts under way, one task each; at close, those not stored yet are counted
    and stored there (`finish`), so a stopped daemon keeps no estimate."""

    def __init__(
        self,
        run: Run,
        submit: Submit[Any],
        changed: Callable[..., object],
        calibrator: Calibrator,
    ) -> None:
        self._run = run
        self._submit = submit
        self._changed = changed
        self._calibrator = calibrator
        self._tasks: set[asyncio.Task[None]] = set()
        # message id -> what its count needs, until the count is stored (or cannot be)
        self._pending: dict[str, tuple[SessionState, Message, ModelCounter, Estimate]] = {}

    def after_append(
        self, state: SessionState, change: AppendMessage, counter: ModelCounter
    ) -> None:
        """Start the exact count of `change`'s message when it was appended with its estimate."""
        if change.counts.estimated:
            self._start(state, change.message, counter, change.counts)

    def resume(self, state: SessionState, counter: ModelCounter) -> None:
        """Start the exact counts of the messages a load gave their estimate (`loaded_counts`:
        a daemon killed before their counts landed stored none)."""
        pending = state.data.pending_exact
        for message in state.data.messages if pending else ():
            if message.id in pending:
                self._start(state, message, counter, None)

    def _start(
        self, state: SessionState, message: Message, counter: ModelCounter, estimate: Estimate
    ) -> None:
        self._pending[message.id] = (state, message, counter, estimate)
        task = asyncio.get_running_loop().create_task(self._upgrade(state, message, counter))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _upgrade(self, state: SessionState, message: Message, counter: ModelCounter) -> None:
        parts = [sp.part for sp in message.parts]
        try:
            counts = await self._run(
                lambda: counter.count_parts(message.role, parts, for_learning=False)
            )
            upgrade = CountsUpgraded(message.id, counts.tokens, counts.total)
            applied: Applied = await state.apply_async(upgrade, None, self._submit)
        except Exception:  # the session deleted, the store closed: the estimate stays
            log.warning("the exact count of message %s was not stored", message.id, exc_info=True)
            self._pending.pop(message.id, None)
            return
        estimate = self._pending.pop(message.id, (None, None, None, None))[3]
        self._changed(upgrade, applied)
        self._learn(state.data.model.name, estimate, counts)

    def _learn(self, model: str, estimate: Estimate, exact: PartCounts) -> None:
        """The model's estimate learns from the exact count of what it estimated (its text:
        framing and fixed amounts are not estimated), so the next big message's first figure
        is closer; saved with the calibration (service.close, the next provider sample)."""
        if estimate is None:  # estimated as it loaded: not learnt from
            return
        text_tokens = exact.total - exact.framing - exact.fixed
        self._calibrator.observe(model, estimate.chars_by_class, estimate.raw_text, text_tokens)

    async def drain(self) -> None:
        """Wait for the counts under way (tests, a clean stop)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def finish(self) -> None:
        """At close: stop the tasks, and count and store here every exact count not stored
        yet (the event loop is not needed: SessionState.apply writes in this thread)."""
        for task in self._tasks:
            task.cancel()
        pending, self._pending = self._pending, {}
        for message_id, (state, message, counter, estimate) in pending.items():
            if message_id not in state.data.pending_exact:
                continue  # stored by its task already
            try:
                parts = [sp.part for sp in message.parts]
                counts = counter.count_parts(message.role, parts, for_learning=False)
                state.apply(CountsUpgraded(message_id, counts.tokens, counts.total))
            except Exception:
                log.warning(
                    "the exact count of message %s was not stored", message_id, exc_info=True
                )
                continue
            self._learn(state.data.model.name, estimate, counts)
