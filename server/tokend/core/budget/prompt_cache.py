"""The prompt cache a session's last calls left: what `budget/snapshot` reports as `promptCache`
and what the prune policy weighs (core.compaction.prune_cache).

A session keeps the figure as it goes (`cache_after`, one call at a time), so a snapshot never
walks the messages and a session restored from its row alone (core.session.gauge_state) answers without
reading them; `last_cache` works it out from a window's messages where a change rebuilds the
window (a compaction, a rewind, a reply that grew, a whole load). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from tokend.core.budget.snapshot import PromptCacheFigures
from tokend.core.types import Message, Usage

TTL_5M_S = 300
TTL_1H_S = 3_600


def cache_after(previous: PromptCacheFigures | None, message: Message) -> PromptCacheFigures | None:
    """The figure once `message` is in the window: a call that read or wrote the cache replaces
    it; its lifetime is the one the newest write used (a read refreshes the entries, keeping
    theirs)."""
    usage = message.usage
    if usage is None or not cached(usage):
        return previous
    if usage.cache_write_tokens:
        ttl = TTL_1H_S if usage.cache_write_1h_tokens > 0 else TTL_5M_S
    else:
        ttl = previous.ttl_s if previous is not None else TTL_5M_S
    return PromptCacheFigures(
        usage.cache_read_tokens + usage.cache_write_tokens, ttl, done(message)
    )


def last_cache(messages: Sequence[Message]) -> PromptCacheFigures | None:
    """The figure of a window of `messages`, oldest first (None: no call read or wrote the
    cache)."""
    figure: PromptCacheFigures | None = None
    for message in messages:
        figure = cache_after(figure, message)
    return figure


def newest_cache(newest_first: Iterable[Message]) -> PromptCacheFigures | None:
    """`last_cache` of a window given newest first: it reads back to the newest call that
    read or wrote the cache, then on to the newest that wrote it (its lifetime), no further."""
    head: Usage | None = None
    at: datetime | None = None
    ttl = TTL_5M_S
    for message in newest_first:
        usage = message.usage
        if usage is None or not cached(usage):
            continue
        if head is None:
            head, at = usage, done(message)
        if usage.cache_write_tokens:
            ttl = TTL_1H_S if usage.cache_write_1h_tokens > 0 else TTL_5M_S
            break
    if head is None or at is None:
        return None
    return PromptCacheFigures(head.cache_read_tokens + head.cache_write_tokens, ttl, at)


def done(message: Message) -> datetime:
    """When a call's reply was complete (its message's time when not recorded)."""
    return message.completed_at or message.created_at


def cached(usage: Usage | None) -> bool:
    return usage is not None and (usage.cache_read_tokens > 0 or usage.cache_write_tokens > 0)
