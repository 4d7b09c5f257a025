"""A session's history over time: its messages (live or not), rewinds, forks, gated outputs.

A rewind is a change of the session (core.session.changes.Rewind) applied by its owner; a fork creates
a new session in the store. Nothing here deletes: what leaves the live context is marked.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokend.core.budget.snapshot import BudgetSnapshot
from tokend.core.errors import InvalidParams
from tokend.core.excerpt import excerpt
from tokend.core.session.changes import Rewind
from tokend.core.types import Message, SessionFigures, SessionInfo
from tokend.service.session.ports import SessionService
from tokend.service.session.sessions import new_id

MAX_READ_CHARS = 1_000_000  # toolOutput/read returns at most this many characters at once


def session_messages(
    service: SessionService, session_id: str, include_compacted: bool = False
) -> list[Message]:
    """The live context (the summary first), or every message ever appended, oldest first."""
    state = service.sessions.state(session_id)  # SessionNotFound for an unknown id
    if not include_compacted:
        return list(state.data.messages)
    # A provider's compaction marks what it retired (loading marks older sessions' messages).
    return service.store.messages.load_all_messages(session_id)


@dataclass(frozen=True)
class Rewound:
    removed: int
    snapshot: BudgetSnapshot


def messages_after(service: SessionService, session_id: str, to_message_id: str) -> int:
    """How many live messages a rewind to `to_message_id` would take out (a dry run)."""
    return len(_after(service, session_id, to_message_id))


def _after(service: SessionService, session_id: str, to_message_id: str) -> tuple[str, ...]:
    state = service.sessions.state(session_id)
    ids = [m.id for m in state.data.messages]
    if to_message_id not in ids:
        raise InvalidParams(
            f"toMessageId {excerpt(to_message_id)} is not in the live context of session "
            f"{excerpt(session_id)}: "
            "session/messages lists the messages a rewind can go back to"
        )
    if state.data.messages[ids.index(to_message_id)].summary:
        raise InvalidParams(
            f"toMessageId {to_message_id} is the compaction summary: rewind to a message after it"
        )
    return tuple(ids[ids.index(to_message_id) + 1 :])


async def rewind(
    service: SessionService, session_id: str, to_message_id: str, if_version: int | None
) -> Rewound:
    """Take every message after `to_message_id` out of the live context (kept, marked)."""
    state = service.sessions.state(session_id)
    state.check_version(if_version)
    removed = _after(service, session_id, to_message_id)
    change = Rewind(to_message_id, removed, service.clock.now())
    applied = await state.apply_async(change, if_version, service.workers.submit)
    return Rewound(len(removed), service.listeners.announce(change, applied))


def planned_rewind(
    service: SessionService, session_id: str, to_message_id: str, if_version: int | None
) -> tuple[str, ...]:
    """The message ids a rewind would take out, checked as `rewind` checks them (before a
    "both" rewind writes any file)."""
    service.sessions.state(session_id).check_version(if_version)
    return _after(service, session_id, to_message_id)


async def complete_rewind(
    service: SessionService, session_id: str, to_message_id: str, ids: tuple[str, ...]
) -> str:
    """Finish the conversation part of a "both" rewind a kill interrupted: the messages of
    `ids` still live after `to_message_id` leave the live context. What was done, in words."""
    state = service.sessions.state(session_id)
    live = [m.id for m in state.data.messages]
    if to_message_id not in live:
        return "unchanged (the message it went back to is no longer live)"
    later = set(live[live.index(to_message_id) + 1 :])
    removed = tuple(i for i in ids if i in later)
    if not removed:
        return "already rewound"
    change = Rewind(to_message_id, removed, service.clock.now())
    applied = await state.apply_async(change, None, service.workers.submit)
    service.listeners.announce(change, applied)
    return f"rewound ({len(removed)} messages left the live context)"


def fork(
    service: SessionService,
    session_id: str,
    at_message_id: str | None = None,
    title: str | None = None,
) -> tuple[SessionInfo, int]:
    """A child session holding the parent's messages up to `at_message_id` (all when None);
    the parent is kept as it is. Returns the child and how many messages it holds."""
    parent = service.sessions.state(session_id).data.info
    now = service.clock.now()
    child = SessionInfo(
        id=new_id(),
        model=parent.model,
        created_at=now,
        updated_at=now,
        title=title or (f"{parent.title} (fork)" if parent.title else None),
        workspace_uri=parent.workspace_uri,
        parent_id=parent.id,
        context_window=parent.context_window,
        figures=SessionFigures(compactions=parent.figures.compactions),
        forked_from=at_message_id,
    )
    copied = service.store.fork_session(child, at_message_id)
    return child, copied


@dataclass(frozen=True)
class OutputSlice:
    ref: str
    text: str
    offset: int  # characters
    total_chars: int


def read_tool_output(
    service: SessionService, session_id: str, ref: str, offset: int, length: int
) -> OutputSlice:
    """Characters [offset, offset + length) of a tool output a gate kept whole."""
    service.sessions.state(session_id)  # SessionNotFound for an unknown id
    if length > MAX_READ_CHARS:
        raise InvalidParams(f"length is at most {MAX_READ_CHARS:,} characters; read in slices")
    found = service.store.messages.read_tool_output(session_id, ref, offset, length)
    if found is None:
        raise InvalidParams(
            f"ref {excerpt(ref)} names no tool output of session {excerpt(session_id)}: use the "
            "ref a gated "
            "result's text or the session/append result gave"
        )
    text, total = found
    return OutputSlice(ref, text, offset, total)
