"""What one session change stores, as data: the owner (service.session.state) builds one
`SessionCommit` per change and the store (core.ports.Store.commit_change) writes all of it in
one transaction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tokend.core.types import ChatFile, Message, SessionFigures


@dataclass(frozen=True, slots=True)
class SessionFields:
    """Columns of the session row a change sets; None leaves one as stored."""

    figures: SessionFigures | None = None
    title: str | None = None
    extra: Mapping[str, object] | None = None
    chat_files: tuple[ChatFile, ...] | None = None
    transcript_cursor: Mapping[str, object] | None = None
    compacted_at: datetime | None = None
    deleted_at: datetime | None = None  # a soft delete
    restored: bool = False  # clears deleted_at


@dataclass(frozen=True, slots=True)
class Compacted:
    """Messages taken out of the live context at `at`, by the summary message `by` (or
    "rewind", or a provider's compaction boundary); they stay in the store, marked."""

    message_ids: tuple[str, ...]
    by: str
    at: datetime


@dataclass(frozen=True, slots=True)
class SessionCommit:
    """One change of a session, stored whole or not at all.

    `version` (expected, new) moves the stored version by compare-and-set first (None: a
    repair that is no change of the conversation); `message` is appended with `message_tokens`
    as its count and `tool_outputs` (ref -> whole text) kept beside it; parts are marked
    pruned at `pruned_at`; `compacted` marks messages out of the live context; `fields` sets
    columns of the session row; `grown` (a stored message, the index of its first new part,
    its new count) gets its new parts, usage, cost and count; `recounted` (a stored message,
    its new count) gets its parts' counts and its count."""

    version: tuple[int, int] | None = None
    message: Message | None = None
    message_tokens: int | None = None
    tool_outputs: Mapping[str, str] = field(default_factory=dict)
    pruned_part_ids: tuple[str, ...] = ()
    pruned_at: datetime | None = None
    compacted: tuple[Compacted, ...] = ()
    fields: SessionFields = field(default_factory=SessionFields)
    grown: tuple[Message, int, int] | None = None
    recounted: tuple[Message, int] | None = None
