"""Memory files (Claude Code's hierarchy) as one chunk of the window, cut visibly over a cap.

The service finds and reads the files (service/workspace/memory.py); here they are judged:
which project rules apply (their front matter's `paths:` globs against the session's files),
how the auto-memory index is limited (its first AUTO_MEMORY_LINES lines, the rest dropped and
said so), the chunk's text, and what a cap cuts (whole files, from the last loaded backwards,
the managed policy never; each cut file named with its tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pathspec

from tokend.core.assembly.context_inputs import file_block_text

AUTO_MEMORY_LINES = 200
DEFAULT_MEMORY_CAP_TOKENS = 25_000

# Scopes, in load order (a later file is more specific).
MANAGED, USER, USER_RULE, PROJECT, LOCAL, PROJECT_RULE, AUTO = (
    "managed policy",
    "user",
    "user rule",
    "project",
    "project local",
    "project rule",
    "auto memory",
)


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """`path` as shown to the model (absolute, or ~/-relative for the user's files)."""

    path: str
    scope: str
    text: str
    note: str | None = None  # e.g. the lines the auto-memory limit dropped


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    path: str
    scope: str
    tokens: int  # of the file's block in the chunk (0 when cut)
    cut: str | None = None  # why it is not in the chunk
    note: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryChunk:
    """The files sent (with the tokens of each one's block) and every file's entry."""

    kept: tuple[tuple[MemoryFile, int], ...]
    entries: tuple[MemoryEntry, ...]

    @property
    def tokens(self) -> int:
        return sum(t for _, t in self.kept)

    @property
    def warnings(self) -> tuple[str, ...]:
        notes = [f"memory: {e.path}: {e.note}" for e in self.entries if e.note]
        cuts = [f"memory: {e.path} left out: {e.cut}" for e in self.entries if e.cut]
        return (*notes, *cuts)


def front_matter(text: str) -> tuple[tuple[str, ...], str]:
    """(`paths:` globs, body) of a rule file. Accepts `paths:` (or `globs:`) as a YAML list,
    a flow list `[a, b]`, or a comma-separated string; no front matter: no globs."""
    if not text.startswith("---"):
        return (), text
    lines = text.split("\n")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return (), text
    globs: list[str] = []
    in_list = False
    for line in lines[1:end]:
        stripped = line.strip()
        key, sep, value = stripped.partition(":")
        if sep and key in ("paths", "globs") and not stripped.startswith("-"):
            value = value.strip().strip("[]")
            globs.extend(_unquote(v) for v in value.split(",") if v.strip())
            in_list = not value
        elif in_list and stripped.startswith("-"):
            globs.append(_unquote(stripped[1:]))
        elif stripped:
            in_list = False
    return tuple(g for g in globs if g), "\n".join(lines[end + 1 :]).lstrip("\n")


def _unquote(value: str) -> str:
    return value.strip().strip("\"'")


def rule_applies(globs: Sequence[str], session_paths: Iterable[str]) -> bool:
    """A rule without globs always applies; one with globs once a session file matches."""
    if not globs:
        return True
    spec = pathspec.PathSpec.from_lines("gitwildmatch", globs)
    return any(spec.match_file(p) for p in session_paths)


def limit_lines(text: str, limit: int = AUTO_MEMORY_LINES) -> tuple[str, str | None]:
    """The first `limit` lines, and a note saying how many were dropped (None if none)."""
    lines = text.split("\n")
    if len(lines) <= limit:
        return text, None
    dropped = len(lines) - limit
    return "\n".join(lines[:limit]), f"only the first {limit} lines are loaded ({dropped} dropped)"


def memory_block(file: MemoryFile) -> str:
    """How a memory file is sent: as a read-only file block (counted as such)."""
    return file_block_text(file.path, file.text)


def build_chunk(
    files: Sequence[MemoryFile], cap_tokens: int, count: Callable[[str], int]
) -> MemoryChunk:
    """The memory chunk of `files` (in load order), within `cap_tokens` where possible."""
    blocks = [memory_block(f) for f in files]
    costs = [count(b) for b in blocks]
    kept = [True] * len(files)
    total = sum(costs)
    cut_reason: dict[int, str] = {}
    for i in range(len(files) - 1, -1, -1):
        if total <= cap_tokens:
            break
        if files[i].scope == MANAGED:
            continue
        kept[i] = False
        total -= costs[i]
        cut_reason[i] = f"{costs[i]:,} tokens over the {cap_tokens:,}-token memory cap"
    entries = tuple(
        MemoryEntry(f.path, f.scope, costs[i] if kept[i] else 0, cut_reason.get(i), f.note)
        for i, f in enumerate(files)
    )
    sent = tuple((f, costs[i]) for i, f in enumerate(files) if kept[i])
    return MemoryChunk(sent, entries)
