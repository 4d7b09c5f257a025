"""A session's window starting over, as `evolve` applies it (core.session.evolve): a compaction
boundary tokend wrote (`NewWindow`) or one the provider sent in a message. Pure."""

from __future__ import annotations

from dataclasses import replace

from tokend.core.budget.prompt_cache import cache_after, last_cache
from tokend.core.errors import VersionConflict
from tokend.core.session.changes import (
    AppendMessage,
    NewWindow,
)
from tokend.core.session.data import (
    ERROR_HISTORY,
    Added,
    Anchor,
    SessionData,
    anchor_output,
    call_figures,
)
from tokend.core.session.message_log import MessageLog
from tokend.core.session.totals import add_usage as add_usage  # loading.py reads it here
from tokend.core.types import CompactionPart
from tokend.core.usage.accounting import (
    EstimateError,
    anchor_usage,
    billed_usages,
    total_usage,
)
from tokend.core.usage.stats import add_message


def new_window(data: SessionData, change: NewWindow) -> SessionData:
    """A compaction boundary: the summary stands for the covered run at the start of the
    window; the rest follows it. The whole context is counted again (no provider figure
    describes it yet). Raises VersionConflict when the covered messages are no longer the
    start of the window (another compaction or a rewind got there first): appends made while
    the summary was written do not conflict, they come after it."""
    message, covered = change.message, change.covered
    head = data.messages[: len(covered)]
    if len(head) != len(covered) or any(m.id not in covered for m in head):
        raise VersionConflict(
            f"session {data.id} changed while it was being compacted (another compaction or "
            "a rewind came first): compact again",
            {"currentVersion": data.version},
        )
    kept = data.messages[len(covered) :]
    tokens = {message.id: change.tokens}
    tokens.update((m.id, data.message_tokens[m.id]) for m in kept)
    return replace(
        data,
        info=replace(data.info, compacted_at=message.created_at),
        log=MessageLog.of((message, *kept), tokens),
        prompt_cache=last_cache(kept),
        anchor=None,
        added=Added(),
        compactions=data.compactions + 1,
        version=data.version + 2,  # a message and a compaction (as a reload counts them)
        times=add_message(data.times, message),
    )


def provider_window(data: SessionData, change: AppendMessage, part: CompactionPart) -> SessionData:
    """A message carrying the provider's own compaction: a boundary. The window restarts at
    it (what came before leaves the live context, and stays in the store). Every iteration
    the call was billed for goes into the totals; the gauge anchors on the iteration after the
    compaction (core.usage.accounting.anchor_usage), or counts the window when none describes it. An
    opaque compaction (no text to count) counts as the tokens the provider wrote for it."""
    message, counts = change.message, change.counts
    usage = message.usage
    tokens = counts.total
    if not part.summary and part.iterations and part.iterations[-1].type == "compaction":
        tokens += part.iterations[-1].output_tokens
    compacted = replace(
        data,
        info=replace(data.info, compacted_at=message.created_at),
        log=MessageLog.of((message,), {message.id: tokens}),
        prompt_cache=cache_after(None, message),
        anchor=None,
        added=Added(),
        compactions=data.compactions + 1,
        version=data.version + 1,
        times=add_message(data.times, message),
    )
    if usage is None:
        return compacted
    billed = billed_usages(usage, part)
    errors = data.errors
    if data.anchor is not None and change.learn and billed[0].context_tokens > 0:
        # The request as sent: what its first iteration consumed.
        errors = (*errors, EstimateError(data.used_tokens()[0], billed[0].context_tokens))
    costs = dict(compacted.cost_by_model)
    model = message.model or compacted.model.name
    costs[model] = costs.get(model, 0.0) + (message.cost_usd or 0.0)
    anchored = anchor_usage(usage, part)
    anchor = None
    if anchored is not None:
        content = sum(
            t
            for sp, t, sent in zip(message.parts, counts.tokens, counts.sent, strict=True)
            if sent and sp.part is not part
        )
        call = call_figures(message.id, anchored, None, None)
        anchor = Anchor(call, anchor_output(anchored, content), learn=False)
    return replace(
        compacted,
        anchor=anchor,
        totals=add_usage(compacted.totals, total_usage(billed)),
        cost_by_model=costs,
        errors=errors[-ERROR_HISTORY:],
    )
