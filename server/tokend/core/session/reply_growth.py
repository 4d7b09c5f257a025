"""A reply imported while it streamed, grown since (core.session.changes.GrowReply): the message gains
its later blocks, and its call, the lifetime totals, the cost and (when the gauge is anchored
on it) the anchor take the newest usage: the session ends as if the reply had been appended
whole, with its final usage."""

from __future__ import annotations

from dataclasses import replace

from tokend.core.budget.prompt_cache import newest_cache
from tokend.core.errors import InvalidParams
from tokend.core.session.changes import GrowReply
from tokend.core.session.data import Anchor, SessionData, anchor_output, call_figures
from tokend.core.session.totals import replace_usage
from tokend.core.usage.stats import add_message


def grown(data: SessionData, change: GrowReply) -> SessionData:
    """`data` after `change`. InvalidParams when its message is not in the window or carries
    no provider call."""
    index = data.log.index_of(change.message_id)
    old = data.messages[index] if index is not None else None
    if index is None or old is None or old.usage is None:
        raise InvalidParams(f"message {change.message_id} is no provider call in the window")
    message = replace(
        old, parts=(*old.parts, *change.parts), usage=change.usage, cost_usd=change.cost_usd
    )
    model = old.model or data.model.name
    costs = dict(data.cost_by_model)
    costs[model] = costs.get(model, 0.0) - (old.cost_usd or 0.0) + (change.cost_usd or 0.0)
    anchor, counts = data.anchor, change.counts
    if anchor is not None and anchor.call.message_id == old.id:
        was = anchor.call
        call = call_figures(old.id, change.usage, was.predicted_tokens, was.error_pct)
        output = anchor_output(change.usage, counts.total - counts.framing)
        anchor = Anchor(call, output, anchor.delta_tokens, anchor.learn)
    log = data.log.replaced({index: (message, counts.total)})
    return replace(
        data,
        log=log,
        prompt_cache=newest_cache(reversed(log.messages)),
        version=data.version + 1,
        anchor=anchor,
        totals=replace_usage(data.totals, old.usage, change.usage),
        cost_by_model=costs,
        times=add_message(data.times, replace(old, parts=change.parts)),
    )
