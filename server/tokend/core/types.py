"""Domain types shared by every layer. Frozen dataclasses; units are tokens unless a name says chars."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

Role = Literal["user", "assistant", "tool", "system"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system")


class ContentClass(enum.StrEnum):
    """What a piece of text looks like; the estimator and the calibrator key on it."""

    PROSE = "prose"
    CODE = "code"
    JSON = "json"
    CJK = "cjk"  # mostly non-ASCII text (CJK, Cyrillic, ...)
    BLOB = "blob"  # base64 / hex dumps
    LOG = "log"


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    text: str
    provider_metadata: dict[str, Any] | None = None  # round-tripped untouched (signatures etc.)
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    call_id: str
    name: str
    input: Any  # JSON value
    kind: Literal["toolCall"] = "toolCall"


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """A tool's output. When a gate decided at append time (core.session.gates) that the model sees
    less than the whole output, `output` is what the model sees (a preview or a middle-out
    cut), `gate` says how ("preview" | "middleOut"), `ref` names the original kept whole in
    the store (toolOutput/read) and `original_chars` is its length in characters."""

    call_id: str
    name: str
    output: str
    is_error: bool = False
    gate: str | None = None
    ref: str | None = None
    original_chars: int | None = None
    kind: Literal["toolResult"] = "toolResult"


@dataclass(frozen=True, slots=True)
class ImagePart:
    media_type: str
    data_base64: str | None = None
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class FilePart:
    path: str
    kind: Literal["file"] = "file"


class Iteration(NamedTuple):
    """One sampling iteration of a provider call (Anthropic's `usage.iterations`): "compaction"
    (the provider writing its summary, billed apart) or "message". Tokens."""

    type: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class CompactionPart:
    """A compaction summary: `summary` stands for the messages it covers in assembly.
    `digest` is the structured content it was rendered from (core.compaction.digest.Digest as JSON),
    so that the next compaction merges it instead of summarizing a summary.

    With `provider` ("anthropic" | "openai") it is the provider's own compaction, in the
    assistant message whose call compacted: Anthropic's `compaction` block (`summary`, its
    content) or OpenAI's compaction item (`opaque`, its encrypted_content; `item_id`, its id).
    Everything before that message leaves the live context. `iterations` are the call's
    sampling iterations as the provider billed them (kept here, with the part)."""

    summary: str
    digest: dict[str, Any] | None = None
    provider: str | None = None
    opaque: str | None = None
    item_id: str | None = None
    iterations: tuple[Iteration, ...] = ()
    kind: Literal["compaction"] = "compaction"

    def __post_init__(self) -> None:
        # Stored as JSON, iterations come back as lists.
        stored: Any = self.iterations
        if not isinstance(stored, tuple) or (stored and not isinstance(stored[0], Iteration)):
            object.__setattr__(self, "iterations", tuple(Iteration(*item) for item in stored))


Part = (
    TextPart | ReasoningPart | ToolCallPart | ToolResultPart | ImagePart | FilePart | CompactionPart
)


@dataclass(frozen=True, slots=True)
class Usage:
    """What a provider reported for one call. All figures are tokens, all >= 0."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0  # the reasoning share of output_tokens
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0  # every cache write, whatever its lifetime
    cache_write_1h_tokens: int = 0  # the share of cache_write_tokens written with a 1-hour lifetime
    # What the provider's context editing cleared from this call's input (Anthropic's
    # applied_edits, summed): the figures above are the call after those edits.
    cleared_input_tokens: int = 0
    cleared_tool_uses: int = 0
    cleared_thinking_turns: int = 0

    @property
    def context_tokens(self) -> int:
        """The input the call consumed: input + cache read + cache write."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)
class StoredPart:
    """A part as the store holds it: with its id, cached token count and prune mark."""

    id: str
    part: Part
    tokens: int | None = None  # cached count (by the session model's counter)
    compacted_at: datetime | None = None  # set when pruned; the original stays


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    session_id: str
    role: Role
    parts: tuple[StoredPart, ...]
    created_at: datetime
    model: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    summary: bool = False  # a compaction summary message
    completed_at: datetime | None = None
    # Taken out of the live context, kept in the store: by the summary message `compacted_by`
    # names, or by a rewind (compacted_by "rewind").
    compacted_at: datetime | None = None
    compacted_by: str | None = None


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """Where a stored message is, and what its append answered (None: stored before versions
    and counts were kept with messages)."""

    session_id: str
    version: int | None
    tokens: int | None


@dataclass(frozen=True, slots=True)
class EstimateError:
    """A predicted input (tokens) against the provider's report; error_pct is signed (+ = over)."""

    predicted: int
    actual: int

    @property
    def error_pct(self) -> float:
        """(predicted - actual) / actual * 100; 0 when both are 0, inf when only actual is 0."""
        if self.actual == 0:
            return 0.0 if self.predicted == 0 else math.inf
        return (self.predicted - self.actual) / self.actual * 100.0

    @property
    def abs_error_pct(self) -> float:
        return abs(self.error_pct)


@dataclass(frozen=True, slots=True)
class SessionGauge:
    """A session's gauge as stored with its last change, for listings that do not load it
    (`session/list`, `tokend sessions`): tokens, percent of the window, and whether
    `used_tokens` is a count of the whole context (no provider figure anchors it)."""

    used_tokens: int
    used_percentage: float
    context_window: int
    estimated: bool
    version: int = 0
    model: str = ""


@dataclass(frozen=True, slots=True)
class ListedSession:
    """A session as listings show it (`session/list`, `tokend sessions`), read from the store
    without loading it: its row's plain columns and stored gauge, none of its JSON."""

    id: str
    model: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    workspace_uri: str | None = None
    deleted_at: datetime | None = None
    gauge: SessionGauge | None = None  # None: stored before gauges were kept; load it


@dataclass(frozen=True, slots=True)
class AnchorDelta:
    """A prune since the last provider call moved the anchored figure by `tokens`."""

    message_id: str  # the provider call's message
    tokens: int


@dataclass(frozen=True, slots=True)
class SessionFigures:
    """What a reload needs that messages do not hold, and the gauge listings show; the
    session's owner rewrites them with every change."""

    compactions: int = 0
    rewinds: int = 0
    measured: Mapping[str, int] = field(default_factory=dict)  # category -> tokens
    measured_exact: bool = True
    errors: tuple[EstimateError, ...] = ()
    anchor_delta: AnchorDelta | None = None
    gauge: SessionGauge | None = None  # None: stored before gauges were kept; load it
    state: Mapping[str, Any] | None = None  # core.session.gauge_state's JSON (None: load it whole)


@dataclass(frozen=True, slots=True)
class ChatFile:
    """A file added to the session (files/add): its path relative to the workspace."""

    path: str
    read_only: bool


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    model: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    workspace_uri: str | None = None
    parent_id: str | None = None
    context_window: int | None = None  # per-session override of the catalog window
    compacted_at: datetime | None = None
    deleted_at: datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the client's keys, nothing of tokend's
    version: int = 0  # as stored: the version the session's last change made
    figures: SessionFigures = field(default_factory=SessionFigures)
    chat_files: tuple[ChatFile, ...] = ()  # in the order they were added
    # The transcript this session imports or follows and how far (service.transcripts.importer
    # owns its keys); None for a session no transcript feeds.
    transcript_cursor: Mapping[str, Any] | None = None
    forked_from: str | None = None  # session/fork: the parent's message it was forked at
    handoff_from: str | None = None  # session/handoff: the parent session
    goal: str | None = None  # session/handoff: the goal it was started for
