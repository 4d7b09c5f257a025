"""session/handoff: which files a new thread starts with, and its first message.

A handoff starts a child session for a new goal: its first message is the extractive digest of
the parent (core.compaction.summary, focused on the goal) plus up to `max_files` files within `file_tokens`
(Amp's constants: 10 files, 25,000 tokens). The files are ranked by the artifact trail: the ones
the goal names first, then the most recently edited or read; a file whose last operation
deleted or moved it away is left out. Budgets are tokens.

    [handoff]
    max_files = 10
    file_tokens = 25000
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated

from tokend.core.artifacts import file_operations
from tokend.core.config_rules import at_least
from tokend.core.types import Message, ToolCallPart, ToolResultPart

MAX_FILES = 10
FILE_TOKENS = 25_000
_GONE = ("deleted", "moved away")


@dataclass(frozen=True, slots=True)
class HandoffConfig:
    max_files: Annotated[int, at_least(0)] = MAX_FILES
    file_tokens: Annotated[int, at_least(0)] = FILE_TOKENS


def ranked_files(messages: Sequence[Message], goal: str) -> list[str]:
    """Paths the tool calls of `messages` (oldest first) read, created or edited: those the
    goal names first, then the most recently touched first. Failed operations count as no
    touch; a path last deleted or moved away is left out."""
    results = {
        sp.part.call_id: sp.part
        for m in messages
        for sp in m.parts
        if isinstance(sp.part, ToolResultPart)
    }
    last_touch: dict[str, int] = {}
    gone: set[str] = set()
    order = 0
    for message in messages:
        for stored in message.parts:
            if not isinstance(stored.part, ToolCallPart):
                continue
            for path, op in file_operations(stored.part, results.get(stored.part.call_id)):
                if op.endswith("failed"):
                    continue
                order += 1
                if op in _GONE:
                    gone.add(path)
                else:
                    gone.discard(path)
                    last_touch[path] = order
    live = [p for p in last_touch if p not in gone]
    wanted = goal.lower()

    def named(path: str) -> bool:
        name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        return len(name) > 2 and name in wanted

    return sorted(live, key=lambda p: (not named(p), -last_touch[p]))


@dataclass(frozen=True, slots=True)
class FileChoice:
    path: str
    tokens: int
    included: bool
    reason: str | None = None  # why it was left out


def choose_files(
    candidates: Iterable[tuple[str, int | None, str | None]], config: HandoffConfig
) -> list[FileChoice]:
    """`candidates` in rank order as (path, tokens or None when unreadable, why unreadable):
    the first ones that fit, at most `max_files` of them within `file_tokens`; a file that does
    not fit is passed over for smaller ones after it. Reads `candidates` lazily and stops at
    `max_files` included."""
    chosen: list[FileChoice] = []
    used = included = 0
    if config.max_files <= 0:
        return chosen
    for path, tokens, problem in candidates:
        if tokens is None:
            chosen.append(FileChoice(path, 0, False, problem or "unreadable"))
        elif used + tokens > config.file_tokens:
            chosen.append(
                FileChoice(path, tokens, False, f"over the {config.file_tokens:,}-token budget")
            )
        else:
            chosen.append(FileChoice(path, tokens, True))
            used += tokens
            included += 1
            if included >= config.max_files:
                break
    return chosen


def handoff_text(
    goal: str, parent_id: str, digest_text: str, files: Sequence[tuple[str, str]]
) -> str:
    """The child's first message: the goal, the parent's digest, then the files' contents."""
    sections = [
        f"Handoff from session {parent_id}. The goal of this thread:\n{goal.strip()}",
        digest_text,
    ]
    if files:
        blocks = [f"### {path}\n```\n{text.rstrip()}\n```" for path, text in files]
        sections.append("## Relevant files (as they are now on disk)\n\n" + "\n\n".join(blocks))
    return "\n\n".join(sections)
