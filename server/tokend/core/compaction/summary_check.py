"""The quality check after every compaction, before its summary replaces the context.

Mechanical, no model: every item the digest says must survive is looked for, verbatim, in what
the model will see (the summary's text and the messages kept after it): the user's own messages
within their budget (newest first, as the summary grants them), every file of the artifact
index, every exact error line. A summary a model helped write that fails is refused in favour
of the extractive one (service.compaction.tiers); the outcome is told in the action's `detail`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tokend.core.compaction.digest import Digest
from tokend.core.compaction.summary import CountMany, newest_within
from tokend.core.types import Message, TextPart, ToolCallPart, ToolResultPart


@dataclass(frozen=True, slots=True)
class Check:
    """How many of each kind were wanted, and which were not found."""

    wanted: tuple[int, int, int]  # user messages (within budget), files, error lines
    missing_words: tuple[str, ...] = ()
    missing_files: tuple[str, ...] = ()
    missing_errors: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not (self.missing_words or self.missing_files or self.missing_errors)

    @property
    def missing(self) -> int:
        return len(self.missing_words) + len(self.missing_files) + len(self.missing_errors)

    def found(self) -> str:
        """'2 user messages, 38 files, 10 error lines present'."""
        words, files, errors = self.wanted
        return (
            f"{words - len(self.missing_words)}/{words} user messages, "
            f"{files - len(self.missing_files)}/{files} files, "
            f"{errors - len(self.missing_errors)}/{errors} error lines present"
        )

    def gaps(self) -> str:
        """'1 user message, 3 files, 2 error lines' not found ('' when none)."""
        named = (
            (len(self.missing_words), "user message"),
            (len(self.missing_files), "file"),
            (len(self.missing_errors), "error line"),
        )
        return ", ".join(f"{n} {what}{'s' if n > 1 else ''}" for n, what in named if n)


def check_summary(
    digest: Digest,
    summary: str,
    kept: Sequence[Message],
    count_many: CountMany,
    user_words_tokens: int,
) -> Check:
    """The check of `summary` (its text) followed by `kept` (the verbatim tail) against
    `digest` (what the summary stands for)."""
    seen = "\n".join((summary, *visible_strings(kept)))
    words = newest_within(digest.user_words, count_many, user_words_tokens)
    files = [touch.path for touch in digest.files]
    return Check(
        (len(words), len(files), len(digest.errors)),
        tuple(w for w in words if w not in seen),
        tuple(f for f in files if f not in seen),
        tuple(e for e in digest.errors if e not in seen),
    )


def visible_strings(messages: Iterable[Message]) -> Iterable[str]:
    """The strings of `messages` a request carries (a pruned part shows a placeholder, so
    its text is not counted as seen)."""
    for message in messages:
        for stored in message.parts:
            if stored.compacted_at is not None:
                continue
            part = stored.part
            if isinstance(part, TextPart):
                yield part.text
            elif isinstance(part, ToolCallPart):
                yield json.dumps(part.input, ensure_ascii=False)
                yield from _strings(part.input)
            elif isinstance(part, ToolResultPart):
                yield part.output


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
