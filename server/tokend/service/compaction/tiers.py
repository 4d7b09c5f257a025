"""session/compact: the tiers prune -> summarize -> full; every action reported, nothing deleted.

- prune clears old tool output (core.compaction.prune).
- summarize keeps a verbatim tail (core.compaction.plan) and replaces the head with a summary
  (service.compaction.summarizers: a model's narrative when the [summarizer] chain names one and it
  answers well, the extractive digest around it always), written off the event loop and
  applied as a NewWindow: messages appended meanwhile come after it.
- full keeps only the shortest tail; when even that overflows the input limit, the summary
  leaves out its oldest items until it fits, and says so.
- auto walks them, cheapest first, until the gauge is under the autocompact threshold.
A tier that would shrink the context by less than 5% is refused (a skip action says so) and
writes nothing. One compaction at a time per session.
The summary those two tiers write, fitted and checked: service.compaction.summary_tier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from tokend.core.assembly.context_editing import provider_clears
from tokend.core.budget.limits import history_summary_target_tokens
from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.compaction.history_record import record_of
from tokend.core.compaction.plan import MIN_SHRINK, split_window, tail_budget_tokens
from tokend.core.compaction.prune_cache import prune_cache
from tokend.core.compaction.prune_policy import session_prune_plan
from tokend.core.compaction.summary import USER_WORDS_TOKENS
from tokend.core.errors import InvalidParams, VersionConflict
from tokend.core.session.changes import NewWindow, PruneParts
from tokend.core.session.data import SessionData
from tokend.core.session.evolve import evolve
from tokend.core.types import CompactionPart, Message
from tokend.core.usage.pricing import rates_for
from tokend.service.compaction.ports import CompactionService
from tokend.service.compaction.summarizers import AskClient
from tokend.service.compaction.summary_tier import fitted_summary, projected_tokens, summary_detail
from tokend.service.session.state import SessionState
from tokend.service.session.turns import run_to_end

T = TypeVar("T")

STRATEGIES = ("auto", "prune", "summarize", "full")


@dataclass(frozen=True)
class CompactAction:
    kind: str  # "prune" | "summarize" | "full" | "skip"
    parts: int  # results cleared (prune) or messages summarized (summarize, full)
    tokens_freed: int
    detail: str
    message_id: str | None = None  # the summary message (summarize, full)


@dataclass(frozen=True)
class CompactOutcome:
    before: int
    after: int
    actions: list[CompactAction]
    snapshot: BudgetSnapshot


@dataclass(frozen=True)
class CompactRequest:
    strategy: str = "auto"
    from_message_id: str | None = None
    instructions: str | None = None
    automatic: bool = False  # compaction.auto: only when the gauge is over the threshold
    # session/summarize to the connection that asked (the "client" summarizer)
    ask_client: AskClient | None = field(default=None, compare=False)


async def compact_async(
    service: CompactionService, session_id: str, request: CompactRequest = CompactRequest()
) -> CompactOutcome:
    """Run the tiers `request.strategy` names (see the module docstring).

    Every tier is planned first, on the session's data as the earlier tiers would leave it;
    nothing is written until all are planned. Cancelling the task while it plans (a slow
    summarizer included) writes nothing and raises CancelledError; once the changes are being
    written, a cancel comes too late and the outcome is returned."""
    if request.strategy not in STRATEGIES:
        raise InvalidParams(f"strategy must be one of {', '.join(STRATEGIES)}")
    state = service.sessions.state(session_id)
    async with state.compacting:
        before = state.snapshot.used_tokens
        threshold = state.snapshot.autocompact_threshold
        if request.automatic and before < threshold:
            return CompactOutcome(before, before, [], state.snapshot)  # done meanwhile
        cfg = service.models.config_for(state.data.info.workspace_uri).compaction
        tiers = ["prune", "summarize", "full"] if request.strategy == "auto" else [request.strategy]
        if request.strategy == "auto" and not cfg.prune:
            tiers.remove("prune")
        data = state.data
        planned: list[Planned] = []
        for tier in tiers:
            if tier == "prune":
                step = await _prune(service, data, threshold)
            else:
                step = await _summarize(service, data, request, full=tier == "full")
            planned.append(step)
            if step.change is not None:
                data = evolve(data, step.change).data
                if data.used_tokens()[0] < threshold:
                    break
        actions = await run_to_end(_apply(service, state, planned))
        snapshot = state.snapshot
        return CompactOutcome(before, snapshot.used_tokens, actions, snapshot)


@dataclass(frozen=True)
class Planned:
    """A tier's action, and the change that does it (None for a skip)."""

    action: CompactAction
    change: NewWindow | PruneParts | None = None


async def _apply(
    service: CompactionService, state: SessionState, planned: Sequence[Planned]
) -> list[CompactAction]:
    """Write the planned changes in order. A summary whose covered messages changed meanwhile
    (another compaction or a rewind came first) becomes a skip; appends made meanwhile stay."""
    actions = []
    for step in planned:
        if step.change is None:
            actions.append(step.action)
            continue
        try:
            await service.changes.apply_compaction_async(state.id, step.change)
        except VersionConflict as conflict:
            actions.append(CompactAction("skip", 0, 0, f"{step.action.kind}: {conflict.message}"))
            continue
        actions.append(step.action)
    return actions


def compact(
    service: CompactionService,
    session_id: str,
    strategy: str = "auto",
    *,
    from_message_id: str | None = None,
    instructions: str | None = None,
) -> CompactOutcome:
    """compact_async for callers without an event loop (the CLI on the store, tests)."""
    request = CompactRequest(strategy, from_message_id, instructions)
    return asyncio.run(compact_async(service, session_id, request))


# -- the tiers ---------------------------------------------------------------------------------


def _shrink_refused(tier: str, before: int, after: int) -> CompactAction | None:
    """A skip when `after` is not at least 5% under `before` (nothing is written)."""
    if before > 0 and before - after >= MIN_SHRINK * before:
        return None
    pct = 0.0 if before <= 0 else (before - after) / before * 100
    return CompactAction(
        "skip",
        0,
        0,
        f"{tier}: would take the context from {before:,} to {after:,} tokens ({pct:.1f}% "
        f"smaller, under the {MIN_SHRINK:.0%} minimum); nothing written",
    )


async def _prune(service: CompactionService, data: SessionData, threshold: int) -> Planned:
    cfg = service.models.config_for(data.info.workspace_uri).compaction
    before = data.used_tokens()[0]
    info = data.model
    rates = rates_for(info.prices, info.price_tiers, before)
    now = service.clock.now()
    editing = service.models.config_for(data.info.workspace_uri).context_editing
    clears = provider_clears(editing, info.name)  # Anthropic's context editing: it prunes
    plan = session_prune_plan(data, cfg, rates, now, threshold, provider_clears=clears)
    if not plan.part_ids:
        return Planned(CompactAction("skip", 0, 0, f"prune: {plan.skipped_reason}"))
    change = service.changes.prune_change(data, plan.part_ids)
    after = projected_tokens(data, change)
    refused = _shrink_refused("prune", before, after)
    if refused is not None:
        return Planned(refused)
    freed = before - after
    detail = (
        f"cleared {len(plan.part_ids)} old tool results ({freed:,} tokens freed); "
        "originals kept in the store"
    )
    if info.supports_prompt_caching:
        cache = prune_cache(data.messages, data.message_tokens, change, freed, rates, now)
        if cache is not None:
            detail += "; " + cache.line(info.name)
    action = CompactAction("prune", len(plan.part_ids), freed, detail)
    return Planned(action, change)


async def _summarize(
    service: CompactionService, data: SessionData, request: CompactRequest, *, full: bool
) -> Planned:
    tier = "full" if full else "summarize"
    limit = service.models.input_limit(data)
    budget = service.models.config_for(data.info.workspace_uri).budget
    from_id = None if full else request.from_message_id
    split = split_window(
        data.messages, data.message_tokens, 0 if full else tail_budget_tokens(limit), from_id
    )
    if isinstance(split, str):
        if from_id is not None:
            raise InvalidParams(f"fromMessageId: {split}")
        return Planned(CompactAction("skip", 0, 0, f"{tier}: {split}"))
    target = history_summary_target_tokens(data.model, budget)
    words = min(USER_WORDS_TOKENS, max(limit // 8, 1))
    # The user's words and the artifact index come from the whole stored history (every
    # window, before foreign boundaries, earlier summaries and prunes): core.compaction.history_record.
    # Messages out of the live context exist only after a boundary (or a rewind, whose
    # messages the record leaves out): without one, the live context is the history.
    history: Sequence[Message] = data.messages
    if data.messages and _starts_window(data.messages[0]):
        history = await service.workers.run(
            lambda: service.store.messages.load_all_messages(data.id)
        )
    written, after, checked = await fitted_summary(
        service, data, split, (target, words), request, limit, full, history
    )
    before = data.used_tokens()[0]
    refused = _shrink_refused(tier, before, after)
    if refused is not None:
        return Planned(refused)
    record = await service.workers.run(lambda: record_of(history, split.head))  # for the detail
    action = CompactAction(
        tier,
        sum(1 for m in split.head if not m.summary),
        before - after,
        summary_detail(split, written, record, checked),
        written.change.message.id,
    )
    return Planned(action, written.change)


def _starts_window(message: Message) -> bool:
    """A summary, or a message carrying a provider's compaction: earlier windows are stored."""
    return message.summary or any(isinstance(sp.part, CompactionPart) for sp in message.parts)
