"""A summary's digest: everything extracted from the messages a compaction took out (the
user's words, the artifact index, errors, the last plan and conclusions, earlier foreign
summaries), and its JSON form, which the summary message's CompactionPart keeps so the next
compaction merges it instead of summarizing a summary (core.compaction.summary renders it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tokend.core.artifacts import CommandRun, FileTouch


@dataclass(frozen=True, slots=True)
class Digest:
    """Everything extracted from the summarized messages (oldest first in every list)."""

    objective: str | None = None  # the first thing the user asked
    user_words: tuple[str, ...] = ()
    files: tuple[FileTouch, ...] = ()
    commands: tuple[CommandRun, ...] = ()
    errors: tuple[str, ...] = ()
    conclusions: tuple[str, ...] = ()  # the assistant's last texts
    todos: tuple[tuple[str, str], ...] = ()  # the last plan: (status, text)
    messages: int = 0  # messages summarized, over every compaction
    foreign: tuple[str, ...] = ()  # earlier summaries by the agent or provider, as written


# -- the digest as JSON (kept in the summary message's CompactionPart) ---------------------------


def digest_to_json(digest: Digest) -> dict[str, Any]:
    return {
        "objective": digest.objective,
        "userWords": list(digest.user_words),
        "files": [[t.path, [[op, n] for op, n in t.ops]] for t in digest.files],
        "commands": [[c.command, c.status] for c in digest.commands],
        "errors": list(digest.errors),
        "conclusions": list(digest.conclusions),
        "todos": [[s, t] for s, t in digest.todos],
        "messages": digest.messages,
        "foreign": list(digest.foreign),
    }


def digest_from_json(data: Mapping[str, Any]) -> Digest:
    """The digest `digest_to_json` wrote (malformed entries are skipped)."""

    def strings(key: str) -> tuple[str, ...]:
        return tuple(v for v in data.get(key) or () if isinstance(v, str))

    def pairs(key: str) -> list[tuple[str, str]]:
        return [
            (v[0], v[1])
            for v in data.get(key) or ()
            if isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v)
        ]

    files = []
    for entry in data.get("files") or ():
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
            ops = tuple(
                (op[0], op[1])
                for op in entry[1]
                if isinstance(op, list)
                and len(op) == 2
                and isinstance(op[0], str)
                and isinstance(op[1], int)
            )
            files.append(FileTouch(entry[0], ops))
    objective = data.get("objective")
    messages = data.get("messages")
    return replace(
        Digest(),
        objective=objective if isinstance(objective, str) else None,
        user_words=strings("userWords"),
        files=tuple(files),
        commands=tuple(CommandRun(c, s) for c, s in pairs("commands")),
        errors=strings("errors"),
        conclusions=strings("conclusions"),
        todos=tuple(pairs("todos")),
        messages=messages if isinstance(messages, int) else 0,
        foreign=strings("foreign"),
    )
