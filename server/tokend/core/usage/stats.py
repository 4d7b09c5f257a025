"""Figures about how a session and the daemon use the provider. Pure.

- Rate: input + output tokens per minute over a sliding 60 s, against `[rate] tpm_limit`.
  A provider call counts all the tokens it reported (input, cache read, cache write, output)
  at the time its reply was recorded.
- Cost and time, as Claude Code's status line reports them (`cost.total_duration_ms`,
  `total_api_duration_ms`, `total_lines_added`, `total_lines_removed`), from a session's messages.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any

from tokend.core.config_rules import Check
from tokend.core.types import Message, ToolCallPart, ToolResultPart, Usage


@dataclass(frozen=True, slots=True)
class Call:
    """One provider call, as recorded: when its reply was stored, its cost (USD), its usage."""

    session_id: str
    workspace_uri: str | None
    model: str
    at: datetime
    cost_usd: float
    usage: Usage
    message_id: str = ""  # the message that reported it


RATE_WINDOW = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class RateConfig:
    """`[rate]`: the provider's tokens-per-minute limit (None: none configured)."""

    tpm_limit: Annotated[
        int | None, Check(lambda v: v > 0, "an integer > 0 (tokens per minute)")
    ] = None


def call_tokens(usage: Usage) -> int:
    """What one call puts against a tokens-per-minute limit: all input and the output."""
    return usage.context_tokens + usage.output_tokens


@dataclass(frozen=True, slots=True)
class RateHeadroom:
    """Tokens in the last 60 s, the configured limit, and what is left of it (tokens)."""

    tokens_per_minute: int
    tpm_limit: int | None

    @property
    def headroom_tokens(self) -> int | None:
        return None if self.tpm_limit is None else max(0, self.tpm_limit - self.tokens_per_minute)

    @property
    def used_percentage(self) -> float | None:
        if self.tpm_limit is None:
            return None
        return round(100 * self.tokens_per_minute / self.tpm_limit, 1)


# -- cost and time ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimeFigures:
    """Claude Code's status-line cost fields. Milliseconds; lines. `api_duration_ms` is None
    when no call reported a request time distinct from its completion."""

    wall_duration_ms: int
    api_duration_ms: int | None
    lines_added: int
    lines_removed: int


@dataclass(frozen=True, slots=True)
class TimeTally:
    """The running sums behind TimeFigures, moved on one message at a time (`add_message`), so a
    session keeps its figures without reading its old messages again. `open_edits` holds the
    lines of edit tool calls whose result has not come yet (call id -> (added, removed)): an
    error result takes them back out."""

    started_at: datetime | None = None
    ended_at: datetime | None = None
    api_duration: timedelta | None = None
    lines_added: int = 0
    lines_removed: int = 0
    open_edits: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def figures(self) -> TimeFigures:
        wall = (
            _ms(self.ended_at - self.started_at)
            if self.started_at is not None and self.ended_at is not None
            else 0
        )
        api = None if self.api_duration is None else _ms(self.api_duration)
        return TimeFigures(wall, api, self.lines_added, self.lines_removed)


def add_message(tally: TimeTally, m: Message) -> TimeTally:
    """`tally` with one more message of the session (messages come oldest first): the wall
    duration runs from the first message to the last moment recorded; the API duration sums
    assistant replies whose completion came after their request (`created_at` is when the
    request was made, `completed_at` when the reply ended); edit tool calls add their lines,
    and a result that is an error takes its call's lines back out."""
    end = m.completed_at or m.created_at
    started = m.created_at if tally.started_at is None else min(tally.started_at, m.created_at)
    ended = end if tally.ended_at is None else max(tally.ended_at, end)
    api = tally.api_duration
    if m.role == "assistant" and m.completed_at is not None and m.completed_at > m.created_at:
        api = (api or timedelta()) + (m.completed_at - m.created_at)
    added, removed, open_edits = tally.lines_added, tally.lines_removed, tally.open_edits
    for sp in m.parts:
        part = sp.part
        if isinstance(part, ToolCallPart):
            plus, minus = edit_lines(part.name, part.input)
            if plus or minus:
                added, removed = added + plus, removed + minus
                open_edits = {**open_edits, part.call_id: (plus, minus)}
        elif isinstance(part, ToolResultPart) and part.call_id in open_edits:
            open_edits = dict(open_edits)
            plus, minus = open_edits.pop(part.call_id)
            if part.is_error:
                added, removed = added - plus, removed - minus
    return TimeTally(started, ended, api, added, removed, open_edits)


def tally_messages(messages: Iterable[Message], tally: TimeTally = TimeTally()) -> TimeTally:
    """`tally` with every one of `messages` added, in order."""
    for message in messages:
        tally = add_message(tally, message)
    return tally


def time_figures(messages: Sequence[Message]) -> TimeFigures:
    """From every message of a session (compacted ones included), oldest first; see
    `add_message`."""
    return tally_messages(messages).figures()


def _ms(delta: timedelta) -> int:
    return max(0, round(delta.total_seconds() * 1000))


def edit_lines(tool: str, raw: Any) -> tuple[int, int]:
    """(lines added, lines removed) by one edit tool call, from its input: Claude Code's Edit,
    MultiEdit and Write, Anthropic's text editor tool, and apply_patch (Codex). Other tools 0."""
    if not isinstance(raw, Mapping):
        return (0, 0)
    name = tool.rsplit("__", 1)[-1].lower()
    if name == "edit":
        return _diff(raw.get("old_string"), raw.get("new_string"))
    if name == "multiedit":
        edits = raw.get("edits")
        pairs = [
            _diff(e.get("old_string"), e.get("new_string"))
            for e in edits or ()
            if isinstance(e, Mapping)
        ]
        return (sum(p[0] for p in pairs), sum(p[1] for p in pairs))
    if name == "write":
        return (_lines(raw.get("content")), 0)
    if name.startswith("str_replace") or name == "text_editor":
        command = raw.get("command")
        if command == "str_replace":
            return _diff(raw.get("old_str"), raw.get("new_str"))
        if command == "create":
            return (_lines(raw.get("file_text")), 0)
        if command == "insert":
            return (_lines(raw.get("new_str") or raw.get("insert_text")), 0)
        return (0, 0)
    if name == "apply_patch":
        patch = raw.get("input") or raw.get("patch")
        return _patch_lines(patch) if isinstance(patch, str) else (0, 0)
    return (0, 0)


def _lines(text: Any) -> int:
    return len(text.splitlines()) if isinstance(text, str) else 0


def _diff(old: Any, new: Any) -> tuple[int, int]:
    if not isinstance(old, str) or not isinstance(new, str):
        return (0, 0)
    a, b = old.splitlines(), new.splitlines()
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def _patch_lines(patch: str) -> tuple[int, int]:
    """A Codex/unified patch: lines starting with + or - (headers left out)."""
    added = removed = 0
    for line in patch.splitlines():
        if line.startswith(("+++", "---", "***")):
            continue
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed
