"""What an assembly sends besides the session's history, and how each is sent.

Examples, read-only files, the repo map, chat files and the reminder each become synthetic
user (or example) messages of text parts, so they are counted and rendered like any other
message. Token counts are optional: None means "count it with the assembly's `count`".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from tokend.core.types import Message, StoredPart, TextPart

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class FileText(NamedTuple):
    """A file sent whole; `tokens` counts file_block_text(path, text), as sent."""

    path: str
    text: str
    tokens: int | None = None


class CountedText(NamedTuple):
    text: str
    tokens: int | None = None


class ExampleTurn(NamedTuple):
    role: Literal["user", "assistant"]
    text: str
    tokens: int | None = None


def file_block_text(path: str, text: str) -> str:
    """How a file is sent (count this text for FileText.tokens)."""
    return f"{path}\n```\n{text}\n```"


def examples_messages(examples: Sequence[ExampleTurn]) -> list[Message]:
    """One message per example turn, in order."""
    return [_message(f"example{i}", t.role, [(t.text, t.tokens)]) for i, t in enumerate(examples)]


def files_messages(name: str, files: Sequence[FileText]) -> list[Message]:
    """One user message holding every file as a block, or none without files."""
    if not files:
        return []
    return [_message(name, "user", [(file_block_text(f[0], f[1]), f[2]) for f in files])]


def text_messages(name: str, text: CountedText | None) -> list[Message]:
    """One user message holding `text`, or none without it."""
    return [_message(name, "user", [(text[0], text[1])])] if text is not None else []


def _message(name: str, role: Any, texts: Sequence[tuple[str, int | None]]) -> Message:
    parts = tuple(
        StoredPart(id=f"{name}:{i}", part=TextPart(text), tokens=tokens)
        for i, (text, tokens) in enumerate(texts)
    )
    return Message(id=name, session_id="", role=role, parts=parts, created_at=_EPOCH)
