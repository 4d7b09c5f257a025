"""compaction.auto, and session/append's use case that runs it: the message is appended, then,
when the gauge passed the autocompact threshold, the auto tiers (service.compaction.tiers) run, followed
by the appending connection ($/progress, cancellable) and never making the append wait on a model
writing a summary once it has its answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.session.gates import GatedOutput, gated_outputs
from tokend.core.types import Part, Role, Usage
from tokend.service.compaction.ports import CompactionService
from tokend.service.compaction.summarizers import AskClient
from tokend.service.compaction.tiers import CompactOutcome, CompactRequest, compact_async

T = TypeVar("T")


class AutoProgress(Protocol):
    """How the connection whose append started an automatic compaction follows it ($/progress
    in the LSP layer): `begin` gets the way to cancel it, `end` says how it ended."""

    async def begin(self, cancel: Callable[[], object]) -> None: ...

    def end(self, message: str) -> None: ...


async def auto_compact_async(
    service: CompactionService,
    session_id: str,
    ask_client: AskClient | None = None,
    progress: AutoProgress | None = None,
) -> CompactOutcome | None:
    """compaction.auto: the auto tiers when the gauge is at or over the autocompact threshold.

    None when not needed, disabled, already running (the running one is announced when done;
    an append does not wait for a model writing a summary), cancelled, or when no tier could
    act (the snapshot then warns that the session is over the threshold). Never silent: the
    caller announces what was done. Cancelled (through `progress`, or the awaiting task's own
    cancel), it writes nothing, unless its changes were already being written."""
    state = service.sessions.state(session_id)
    if not service.models.config_for(state.data.info.workspace_uri).compaction.auto:
        return None
    if state.snapshot.used_tokens < state.snapshot.autocompact_threshold:
        return None
    if state.compacting.locked():
        return None
    request = CompactRequest("auto", automatic=True, ask_client=ask_client)
    task = asyncio.ensure_future(compact_async(service, session_id, request))
    ended = "failed"
    try:
        if progress is not None:
            await _settled(asyncio.ensure_future(progress.begin(task.cancel)), task)
        outcome = await _settled(task, task)
        if outcome is None:
            ended = "cancelled: nothing written"
            return None
        ended = f"{outcome.before:,} -> {outcome.after:,} tokens"
    finally:
        if progress is not None:
            progress.end(ended)
    return outcome if any(a.kind != "skip" for a in outcome.actions) else None


async def _settled(awaited: asyncio.Future[T], compaction: asyncio.Future[Any]) -> T | None:
    """`awaited`'s result, None when it was cancelled. A cancel of the task awaiting it is
    passed on to `compaction` (which then writes nothing, or finishes writing) and dropped: the
    append that started an automatic compaction has its result whatever becomes of it."""
    cancelled = 0
    try:
        while True:
            try:
                return await asyncio.shield(awaited)
            except asyncio.CancelledError:
                if awaited.cancelled():
                    return None
                cancelled += 1
                compaction.cancel()
    finally:
        current = asyncio.current_task()
        for _ in range(cancelled if current is not None else 0):
            assert current is not None
            current.uncancel()


# -- session/append ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AppendOutcome:
    message_id: str
    tokens: int  # the message as counted when appended (framing included)
    snapshot: BudgetSnapshot  # after the append (and the automatic compaction, if any)
    version: int  # the reply's: after its automatic compaction, else the one its append made
    auto: CompactOutcome | None  # what compaction.auto did, to announce
    gated: tuple[GatedOutput, ...] = ()  # tool results a gate kept out of the message


async def append_message(
    service: CompactionService,
    session_id: str,
    role: Role,
    parts: Sequence[Part],
    *,
    usage: Usage | None,
    model: str | None,
    if_version: int | None,
    ask_client: AskClient | None = None,
    duration_ms: int | None = None,
    progress: AutoProgress | None = None,
    message_id: str | None = None,
) -> AppendOutcome:
    """session/append: the message, then compaction.auto when the gauge passed the threshold
    (`ask_client` reaches the appending connection, for the "client" summarizer)."""
    appended = await service.appends.append(
        session_id,
        role,
        parts,
        usage=usage,
        model=model,
        if_version=if_version,
        duration_ms=duration_ms,
        message_id=message_id,
    )
    snapshot = appended.snapshot
    auto = await auto_compact_async(service, session_id, ask_client, progress)
    if auto is not None:
        snapshot = auto.snapshot
    gated = tuple(gated_outputs(appended.message.parts)) if appended.message else ()
    version = snapshot.version if auto is not None else appended.version  # a retry: the first's
    return AppendOutcome(appended.message_id, appended.tokens, snapshot, version, auto, gated)
