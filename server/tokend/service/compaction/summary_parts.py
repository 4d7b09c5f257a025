"""A model summarizer whose window is smaller than the head it is asked to summarize: aider's
recursion. The head is split in two at a message boundary (core.compaction.plan.halve), each
half summarized, then the two narratives merged by one more call; a half still too large is
split again, down to depth 3 (eighths of the head). A part still too large at depth 3, or one
message too large alone, gets the extractive summary of that part instead of a model's.

"Too large": the request (the prompt, counted with the session's counter) plus the answer's
`maxTokens` exceeds the summarizer's window, or the transcript would lose messages to
core.compaction.model_summary's MAX_PROMPT_CHARS. The window is the summarizer model's catalog window
(`[models."NAME"] context_window` declares it). Without one (a model the catalog does not
know, the client summarizer) there is one request, the transcript's newest MAX_PROMPT_CHARS.
Every answer, parts and merges alike, is checked as a single answer is; one refused answer
fails the step (the chain moves on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from tokend.core.compaction.model_summary import (
    MAX_PROMPT_CHARS,
    answer_problem,
    build_merge_prompt,
    build_prompt,
    transcript_chars,
)
from tokend.core.compaction.plan import halve
from tokend.core.types import Message

T = TypeVar("T")

MAX_DEPTH = 3
MERGE_OVERHEAD_TOKENS = 400  # the merge request's task and part headings
MIN_PART_ANSWER_TOKENS = 128  # below this, a window is too small to summarize in parts


class Failed(Exception):
    """The step cannot give a narrative (the summarizers module reports `reason`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Writer(Protocol):
    async def write(self, prompt: str, max_tokens: int) -> str: ...


Run = Callable[[Callable[[], T]], Awaitable[T]]


@dataclass
class PartsReport:
    """What one step's narrative took: calls made, the deepest split, parts summarized
    extractively, and the largest request (prompt tokens + maxTokens) against the window."""

    window: int | None
    calls: int = 0
    depth: int = 0
    extractive_parts: int = 0
    largest_request: int = 0

    def line(self) -> str:
        """'' for one call; else how the head was split, for the step's report."""
        if self.depth == 0:
            return ""
        text = (
            f" ({self.calls} calls, split to depth {self.depth} for a {self.window or 0:,}-token "
            f"window, largest request {self.largest_request:,} tokens"
        )
        if self.extractive_parts:
            text += f", {self.extractive_parts} part(s) summarized extractively"
        return text + ")"


class PartsNarrator:
    """One writer's narrative for a head, in parts when it does not fit the writer's window."""

    def __init__(
        self,
        writer: Writer,
        window: int | None,
        message_tokens: Mapping[str, int],
        count: Callable[[str], int],
        extractive: Callable[[Sequence[Message], int], str],
        run: Run[Any],
        instructions: str | None,
    ) -> None:
        self._writer = writer
        self._tokens = message_tokens
        self._count = count
        self._extractive = extractive
        self._run = run
        self._instructions = instructions
        self.report = PartsReport(window)

    async def narrate(self, head: Sequence[Message], max_tokens: int) -> str:
        """The narrative of `head`: one call when it fits (or the window is unknown), else
        the recursion."""
        window = self.report.window
        if window is None:
            whole = await self._run(lambda: build_prompt(head, max_tokens, self._instructions))
            return await self._ask(str(whole), max_tokens)
        prompt = await self._prompt(head, max_tokens)
        if prompt is not None:
            return await self._ask(prompt, max_tokens)
        part_tokens = min(max_tokens, (window - MERGE_OVERHEAD_TOKENS) // 3)
        if part_tokens < MIN_PART_ANSWER_TOKENS or halve(head, self._tokens) is None:
            raise Failed(f"the head does not fit its {window:,}-token window")
        return await self._in_parts(head, 1, part_tokens)

    async def _in_parts(self, messages: Sequence[Message], depth: int, max_tokens: int) -> str:
        halves = halve(messages, self._tokens)
        assert halves is not None  # checked by the caller
        self.report.depth = max(self.report.depth, depth)
        texts = [await self._part(half, depth, max_tokens) for half in halves]
        merge = build_merge_prompt(texts, max_tokens, self._instructions)
        window = self.report.window or 0
        if await self._request_tokens(merge, max_tokens) > window:
            raise Failed(f"two parts' summaries do not fit its {window:,}-token window")
        return await self._ask(merge, max_tokens)

    async def _part(self, messages: Sequence[Message], depth: int, max_tokens: int) -> str:
        prompt = await self._prompt(messages, max_tokens)
        if prompt is not None:
            return await self._ask(prompt, max_tokens)
        if depth < MAX_DEPTH and halve(messages, self._tokens) is not None:
            return await self._in_parts(messages, depth + 1, max_tokens)
        self.report.extractive_parts += 1
        return str(await self._run(lambda: self._extractive(messages, max_tokens)))

    async def _prompt(self, messages: Sequence[Message], max_tokens: int) -> str | None:
        """The request for `messages` when it fits the window whole, else None."""

        def build() -> tuple[str, int] | None:
            if transcript_chars(messages) > MAX_PROMPT_CHARS:
                return None
            prompt = build_prompt(messages, max_tokens, self._instructions)
            return prompt, self._count(prompt) + max_tokens

        built = await self._run(build)
        window = self.report.window or 0
        return built[0] if built is not None and built[1] <= window else None

    async def _request_tokens(self, prompt: str, max_tokens: int) -> int:
        return int(await self._run(lambda: self._count(prompt))) + max_tokens

    async def _ask(self, prompt: str, max_tokens: int) -> str:
        request = await self._request_tokens(prompt, max_tokens)
        self.report.largest_request = max(self.report.largest_request, request)
        self.report.calls += 1
        text = await self._writer.write(prompt, max_tokens)
        tokens = int(await self._run(lambda: self._count(text)))
        problem = answer_problem(text, tokens, max_tokens)
        if problem is not None:
            raise Failed(f"refused: {problem}")
        return text.strip()
