"""What an append must satisfy before it is stored (protocol.md's session/append errors): a
well-formed idempotency key, usage only on an assistant reply and within reason, and tool
results that answer a call of the session's window. Pure checks on the session's data."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from tokend.core.errors import InvalidParams
from tokend.core.excerpt import excerpt
from tokend.core.session.data import SessionData
from tokend.core.types import Message, Part, Role, ToolCallPart, ToolResultPart, Usage

USAGE_WINDOW_FACTOR = 2  # a call's context may exceed the model's catalog window by this much

MESSAGE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def check_message_id(message_id: str) -> None:
    if not MESSAGE_ID.fullmatch(message_id):
        raise InvalidParams(
            "message.id must be 1 to 64 letters, digits, '.', '_', ':' or '-' (a ULID or a "
            "UUID does): it is the append's idempotency key"
        )


def check_message(
    data: SessionData, role: Role, parts: Sequence[Part], usage: Usage | None
) -> None:
    """Refuse what would poison the session: see protocol.md's session/append errors. Run
    beside the event loop (prepare_append): a lazily loaded session's bodies that check_answers
    will need are read here."""
    if not parts:
        raise InvalidParams("message.parts is empty: a message needs at least one part")
    if needs_bodies(data, parts):
        data.log.read()
    if usage is not None:
        if role != "assistant":
            raise InvalidParams(
                f"message.usage on a {role} message: usage is what a provider reported for an "
                "assistant reply; send it with that assistant message"
            )
        bound = USAGE_WINDOW_FACTOR * max(data.model.context_window, data.info.context_window or 0)
        if usage.context_tokens > bound:
            raise InvalidParams(
                f"message.usage reports a {usage.context_tokens:,}-token context, more than "
                f"{USAGE_WINDOW_FACTOR}x the {data.model.name} window: check the figures "
                "(input + cache read + cache write tokens)"
            )
        if usage.output_tokens > bound:
            raise InvalidParams(
                f"message.usage.outputTokens is {usage.output_tokens:,}, more than "
                f"{USAGE_WINDOW_FACTOR}x the {data.model.name} window"
            )


def check_answers(data: SessionData, parts: Sequence[Part]) -> None:
    """Refuse a toolResult that answers no toolCall of the session's window (or of its own
    message): checked against the history as it is when the message is applied. The messages
    in memory are looked at first (newest first: a result answers a recent call), so a lazily
    loaded session's bodies are read only when they are not enough (`needs_bodies`)."""
    read = data.log.filled  # recent() is then the whole window
    unanswered = _unanswered(data.log.recent(), parts)
    if not unanswered or (data.messages and data.messages[0].summary):
        return  # answered; or the call may be in what the summary stands for
    if not read:
        unanswered = _unanswered(reversed(data.messages), parts)
    for index, part in enumerate(parts):
        if isinstance(part, ToolResultPart) and part.call_id in unanswered:
            raise InvalidParams(
                f"message.parts[{index}] answers callId {excerpt(part.call_id)}, which no toolCall "
                "of this session made: append the assistant message with the call first"
            )


def needs_bodies(data: SessionData, parts: Sequence[Part]) -> bool:
    """Whether check_answers would read a lazily loaded session's bodies for `parts` (to read
    them beforehand in a worker thread, not on the event loop)."""
    return not data.log.filled and bool(_unanswered(data.log.recent(), parts))


def _unanswered(newest_first: Iterable[Message], parts: Sequence[Part]) -> set[str]:
    """The call ids of `parts`' tool results that neither their own message nor any of
    `newest_first` called."""
    unanswered = {p.call_id for p in parts if isinstance(p, ToolResultPart)}
    unanswered -= {p.call_id for p in parts if isinstance(p, ToolCallPart)}
    for message in newest_first:
        if not unanswered:
            break
        unanswered.difference_update(
            sp.part.call_id for sp in message.parts if isinstance(sp.part, ToolCallPart)
        )
    return unanswered
