"""Who writes a compaction's summary (core.ports.Summarizer), and the summary change itself.

`extractive` (the default and, for now, the only one): offline and deterministic, built from
the history by core.summary. It never fails, so it is also the end of every fallback chain a
model-backed summarizer will add.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.changes import NewWindow
from tokend.core.compaction_plan import WindowSplit
from tokend.core.session_data import SessionData
from tokend.core.summary import (
    USER_WORDS_TOKENS,
    CountMany,
    digest_of,
    digest_to_json,
    render_summary,
)
from tokend.core.types import Message
from tokend.service.service import TokendService


class ExtractiveSummarizer:
    """core.summary's digest, rendered within the budgets (tokens, as `count_many` counts)."""

    name = "extractive"

    def __init__(self, count_many: CountMany, user_words_tokens: int = USER_WORDS_TOKENS) -> None:
        self._count_many = count_many
        self._user_words_tokens = user_words_tokens
        self.dropped: dict[str, int] = {}

    def summarize(
        self, messages: Sequence[Message], target_tokens: int, instructions: str | None
    ) -> tuple[str, dict[str, Any] | None]:
        digest = digest_of(messages)
        rendered = render_summary(
            digest,
            self._count_many,
            target_tokens=target_tokens,
            user_words_tokens=self._user_words_tokens,
            instructions=instructions,
        )
        self.dropped = dict(rendered.dropped)
        return rendered.text, digest_to_json(digest)


@dataclass(frozen=True)
class WrittenSummary:
    change: NewWindow
    summarizer: str
    dropped: dict[str, int]  # items left out for room, by section


def write_summary(
    service: TokendService,
    data: SessionData,
    split: WindowSplit,
    *,
    target_tokens: int,
    user_words_tokens: int,
    instructions: str | None,
) -> WrittenSummary:
    """The summary of `split.head` as a change (run it in a worker thread: it counts)."""
    summarizer = ExtractiveSummarizer(service.counter(data.model).count_texts, user_words_tokens)
    text, digest = summarizer.summarize(split.head, target_tokens, instructions)
    change = service.summary_change(data, text, digest, [m.id for m in split.head])
    return WrittenSummary(change, summarizer.name, summarizer.dropped)
