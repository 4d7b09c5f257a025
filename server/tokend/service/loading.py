"""Loading a session from the store into a LiveSession.

Reads the current window's messages (and, after a compaction, every message for the usage
totals), counts the parts the store has no token count for, re-derives the last provider call
from the window, and sets a version that never goes back across restarts.
"""

from __future__ import annotations

from collections import Counter

from tokend.core.catalog import ModelInfo
from tokend.core.config import TokendConfig
from tokend.core.ports import Store
from tokend.core.types import Message, SessionInfo
from tokend.service.counting import ModelCounter
from tokend.service.live import LiveSession, add_usage


def load_session(
    store: Store, config: TokendConfig, info: SessionInfo, model: ModelInfo, counter: ModelCounter
) -> LiveSession:
    """The live state of the stored session `info`, its first snapshot published."""
    session_id = info.id
    messages = store.load_messages(session_id)
    live = LiveSession(
        info=info,
        model=model,
        config=config,
        messages=[],
        message_tokens={},
        version=0,
        compactions=int(info.extra.get("compactions", 0)),
        measured=dict(info.extra.get("measured", {})),
    )
    windowed = bool(messages) and messages[0].summary
    every_message = store.load_all_messages(session_id) if windowed else messages
    for message in every_message:
        if message.usage is not None:
            live.totals = add_usage(live.totals, message.usage)
            key = message.model or model.name
            live.cost_by_model[key] = live.cost_by_model.get(key, 0.0) + (message.cost_usd or 0.0)
    missing: dict[str, int] = {}
    for message in messages:
        live.messages.append(message)
        live.message_tokens[message.id] = counter.stored_total(message.role, message.parts)
        missing.update(_uncached(counter, message))
    if missing:
        store.set_part_tokens(missing)
    _replay_anchor(live, info)
    # Every change adds one to a persisted count: messages ever appended, compactions, and
    # changes of the measured context. So the version never goes back, across restarts too.
    live.version = len(every_message) + live.compactions + measured_changes(info)
    live.publish()
    return live


def measured_changes(info: SessionInfo) -> int:
    """How many times the measured context (system prompt, tools, ...) changed, as persisted."""
    return int(info.extra.get("measuredChanges", 0))


def _replay_anchor(live: LiveSession, info: SessionInfo) -> None:
    """Re-derive the last provider call and what was added since, from the loaded window."""
    for index in range(len(live.messages) - 1, -1, -1):
        message = live.messages[index]
        if message.usage is None or message.summary:
            continue
        if info.compacted_at is not None and message.created_at <= info.compacted_at:
            return
        live.messages, after = live.messages[: index + 1], live.messages[index + 1 :]
        live.restore_call(
            message, None, record=False, content_tokens=live.message_tokens[message.id]
        )
        for later in after:
            tokens = live.message_tokens.pop(later.id)
            live.add_message(later, tokens, Counter(), 0.0)
        return


def _uncached(counter: ModelCounter, message: Message) -> dict[str, int]:
    """Token counts (part id -> tokens) of the message's live parts the store has none for."""
    todo = [sp for sp in message.parts if sp.tokens is None and sp.compacted_at is None]
    if not todo:
        return {}
    counts = counter.count_parts(message.role, [sp.part for sp in todo])
    return {sp.id: t for sp, t in zip(todo, counts.tokens, strict=True)}
