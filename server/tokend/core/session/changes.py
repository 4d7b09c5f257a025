"""The changes a session goes through, as data. `core.session.evolve.evolve` applies them; the
service's SessionState persists each one in one transaction before it publishes the result.
All figures are tokens unless a name says chars."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from tokend.core.commit import Compacted
from tokend.core.types import ChatFile, ContentClass, Message, StoredPart, Usage


@dataclass(frozen=True, slots=True)
class PartCounts:
    """One message counted the way its model sees it.

    `tokens` has one count per part (what the part's text costs); `sent` says which parts the
    session's wire format renders (OpenAI never receives reasoning; Anthropic drops unsigned
    thinking): only those count in `total`. `raw_text` is the estimate of the sent text before
    the model's learnt correction (0 with an exact tokenizer); `fixed` are amounts that are not
    text (images)."""

    tokens: tuple[int, ...]
    sent: tuple[bool, ...]
    framing: int
    fixed: int = 0
    raw_text: float = 0.0
    chars_by_class: Mapping[ContentClass, int] = field(default_factory=dict)
    has_reasoning: bool = False
    partial: bool = False  # counting stopped early: the counts are lower bounds
    estimated: bool = False  # a big text's estimate, upgraded by CountsUpgraded when counted

    @property
    def total(self) -> int:
        return self.framing + sum(t for t, s in zip(self.tokens, self.sent, strict=True) if s)


@dataclass(frozen=True, slots=True)
class AppendMessage:
    message: Message
    counts: PartCounts
    # A new message (not one reloaded from the store): its figures are scored against the
    # prediction and may teach calibration.
    learn: bool = True
    # Tool outputs a gate kept out of the message (ref -> the whole original text); they are
    # stored in the same transaction as the message, never held by the session's data.
    tool_outputs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PruneParts:
    """Tool results cleared at `at`; `message_tokens` holds the new totals of the messages
    touched (placeholders instead of the results)."""

    part_ids: frozenset[str]
    at: datetime
    message_tokens: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class NewWindow:
    """A compaction boundary: `message` (a summary, `tokens` as sent) stands for the messages
    `covered` (a run at the start of the window, the previous summary included), which leave
    the live context and stay in the store, marked. The rest of the window (the verbatim
    tail, and whatever was appended while the summary was written) follows the summary."""

    message: Message
    tokens: int
    covered: frozenset[str]


@dataclass(frozen=True, slots=True)
class Rewind:
    """The conversation goes back to just after `to_message_id`: the later messages of the
    window (`removed`) leave the live context at `at` and stay in the store, marked."""

    to_message_id: str
    removed: tuple[str, ...]
    at: datetime


@dataclass(frozen=True, slots=True)
class RecordMeasured:
    """What the system prompt, tools, memory, ... measured at the last assembly."""

    measured: Mapping[str, int]
    exact: bool


@dataclass(frozen=True, slots=True)
class UpdateInfo:
    """The session's title, the client's free-form `extra` keys (merged; None removes a key),
    its chat files, its transcript cursor (None: each left as it is). Not a new version: no
    figure of the gauge moves."""

    title: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)
    chat_files: tuple[ChatFile, ...] | None = None
    transcript_cursor: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    """Soft delete at `at` (session/delete): the session is hidden, its messages kept. A new
    version, so every daemon sharing the store hears of it."""

    at: datetime


@dataclass(frozen=True, slots=True)
class Restore:
    """The deleted session comes back (session/restore). A new version."""


@dataclass(frozen=True, slots=True)
class MarkRetired:
    """A repair found when loading a session stored before a provider's compaction marked what
    it retired: those messages are marked now, each by the first boundary after it, as the
    boundary's append marks them today. The loaded data already leaves them out: not a new
    version, nothing to announce."""

    marks: tuple[Compacted, ...]


@dataclass(frozen=True, slots=True)
class GrowReply:
    """An agent's reply imported while it streamed has grown: an agent writes one reply as
    several records, a block each, the usage of the newest one growing (output_tokens), and a
    follower imports the reply as soon as it sees its first record. The message `message_id`
    (in the window) gains `parts` (its later blocks, after its own) and its call now has
    `usage`, priced at `cost_usd`; `counts` counts the whole message now. A new version."""

    message_id: str
    parts: tuple[StoredPart, ...]
    counts: PartCounts
    usage: Usage
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class CountsUpgraded:
    """The exact count of message `message_id`, appended with its estimate (a big text whose
    exact count was slow): `tokens` per part and `total` as sent replace the estimates. Nothing
    moves when the message has left the window or had results pruned meanwhile."""

    message_id: str
    tokens: tuple[int, ...]
    total: int


Change = (
    AppendMessage
    | CountsUpgraded
    | GrowReply
    | PruneParts
    | NewWindow
    | Rewind
    | RecordMeasured
    | UpdateInfo
    | Delete
    | Restore
    | MarkRetired
)


@dataclass(frozen=True, slots=True)
class CalibrationSample:
    """Text of `chars_by_class` estimated at `estimated_tokens` (before correction) that the
    provider counted as `actual_tokens`."""

    chars_by_class: Mapping[ContentClass, int]
    estimated_tokens: float
    actual_tokens: int
