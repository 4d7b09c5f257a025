"""What tokend asks a model for when a model writes a compaction's summary, and how it judges
the answer. Pure: the service sends the prompt (HTTP or the client) and brings the text back.

A model writes only the narrative: objective, decisions, work state, next step. The user's own
words, the artifact index (files, commands) and the exact errors stay mechanical (core.compaction.summary
adds them itself), because models forget which files were touched. An answer is used only when
every section is there, none is empty and it fits `max_tokens`; anything else is refused with a
reason and the next summarizer of the chain is tried (the extractive one last, which never fails).

The `[summarizer]` settings (user config only: a repository must not choose where the
conversation is sent, nor which environment variable's key goes with it):
    chain = ["openai", "extractive"]   # tried in order; "extractive" is always the last resort
    openai_base_url = "http://127.0.0.1:11434/v1"   # any OpenAI-compatible endpoint
    openai_model = ["small-model", "primary-model"] # one name, or several tried in order
    openai_api_key_env = "OPENAI_API_KEY"           # the NAME of the variable, never a key
    anthropic_base_url, anthropic_model, anthropic_api_key_env   # the same for /v1/messages
    timeout_s = 60                                  # per attempt, seconds
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from tokend.core.config_rules import Check
from tokend.core.types import (
    CompactionPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

Summarizer = Literal["extractive", "client", "openai", "anthropic"]
SUMMARIZERS: tuple[str, ...] = get_args(Summarizer)
SECTIONS = ("Objective", "Decisions", "Work state", "Next step")
MAX_PROMPT_CHARS = 120_000  # the transcript a model reads (the newest messages kept)
MAX_CALL_CHARS = 600
MAX_RESULT_CHARS = 1_500
MIN_ANSWER_TOKENS = 256


_CHAIN = Check(bool, "a non-empty list of " + ", ".join(f'"{s}"' for s in SUMMARIZERS))
_MODELS = Check(
    lambda v: isinstance(v, str) or all(v), "a model name or a list of them"
)  # no empty name in a list
_ENV_NAME = Check(
    lambda v: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v) is not None,
    "the name of an environment variable (never the key itself)",
)
_TIMEOUT = Check(lambda v: 0 < v <= 600, "a number of seconds above 0, at most 600")


@dataclass(frozen=True, slots=True)
class SummarizerConfig:
    chain: Annotated[tuple[Summarizer, ...], _CHAIN] = ("extractive",)
    openai_base_url: str = ""
    openai_model: Annotated[tuple[str, ...] | str, _MODELS] = ()
    openai_api_key_env: Annotated[str, _ENV_NAME] = "OPENAI_API_KEY"
    anthropic_base_url: str = ""
    anthropic_model: Annotated[tuple[str, ...] | str, _MODELS] = ()
    anthropic_api_key_env: Annotated[str, _ENV_NAME] = "ANTHROPIC_API_KEY"
    timeout_s: Annotated[float, _TIMEOUT] = 60

    def models(self, provider: str) -> tuple[str, ...]:
        """The models of `provider` ("openai" | "anthropic"), in the order they are tried."""
        value = self.openai_model if provider == "openai" else self.anthropic_model
        names = (value,) if isinstance(value, str) else value
        return tuple(n for n in names if n.strip())


def answer_tokens(target_tokens: int) -> int:
    """The `maxTokens` a model gets: half the summary's target (the mechanical sections take
    the rest), at least MIN_ANSWER_TOKENS."""
    return max(MIN_ANSWER_TOKENS, target_tokens // 2)


def _task(max_tokens: int, instructions: str | None, merging: bool = False) -> str:
    headings = "\n".join(f"## {name}" for name in SECTIONS)
    what = (
        "You are merging the summaries of consecutive parts of the earlier conversation between "
        "a user and an AI coding agent (oldest first) into one summary"
        if merging
        else "You are writing the summary of the earlier part of a conversation between a user "
        "and an AI coding agent"
    )
    asked = (
        f"{what}, so that the agent can continue the work without it. Answer in Markdown "
        f"with exactly these four sections, each non-empty, in this order:\n{headings}\n"
        "Objective: what the user wants overall. Decisions: what was decided and why, with the "
        "constraints the user set. Work state: what is done, in progress and blocked. Next step: "
        "the one thing to do next.\n"
        "Do not list the files touched, the commands run or the error messages, and do not quote "
        "the user's messages: tokend adds those itself, exactly. Write no preamble.\n"
        f"Stay under {max_tokens:,} tokens."
    )
    if instructions:
        asked += f"\nThe user asked this summary to: {instructions}"
    return asked


def transcript_chars(messages: Sequence[Message]) -> int:
    """The characters of the transcript build_prompt would show for `messages` (all of them
    are shown when this is at most MAX_PROMPT_CHARS)."""
    return sum(len(_message_text(m)) for m in messages if not m.summary)


def build_merge_prompt(
    summaries: Sequence[str], max_tokens: int, instructions: str | None = None
) -> str:
    """The request that merges the narratives of consecutive parts (oldest first) into one
    (aider's recursive summary, when a head is too large for the summarizer's window)."""
    parts = [f"# Part {i} of {len(summaries)}\n{text}" for i, text in enumerate(summaries, 1)]
    return "\n\n".join([_task(max_tokens, instructions, merging=True), *parts])


def build_prompt(
    messages: Sequence[Message], max_tokens: int, instructions: str | None = None
) -> str:
    """The whole request, self-contained (a client may send it as one user message): what to
    write, then a previous summary, then the transcript (its newest MAX_PROMPT_CHARS)."""
    asked = _task(max_tokens, instructions)
    previous = [_summary_text(m) for m in messages if m.summary]
    fresh = [m for m in messages if not m.summary]
    blocks = [_message_text(m) for m in fresh]
    kept: list[str] = []
    size = 0
    for block in reversed(blocks):
        if size + len(block) > MAX_PROMPT_CHARS and kept:
            break
        kept.append(block[-MAX_PROMPT_CHARS:])
        size += len(block)
    kept.reverse()
    parts = [asked]
    if previous:
        parts.append("# The summary of what came before\n" + "\n\n".join(previous))
    transcript = "# The conversation to summarize\n"
    if len(kept) < len(blocks):
        transcript += f"[{len(blocks) - len(kept)} older messages left out for room]\n\n"
    parts.append(transcript + "\n\n".join(kept))
    return "\n\n".join(parts)


def _summary_text(message: Message) -> str:
    return "\n".join(sp.part.summary for sp in message.parts if isinstance(sp.part, CompactionPart))


def _message_text(message: Message) -> str:
    lines = [f"[{message.role}]"]
    for stored in message.parts:
        part = stored.part
        if isinstance(part, TextPart | ReasoningPart) and part.text.strip():
            prefix = "(thinking) " if isinstance(part, ReasoningPart) else ""
            lines.append(prefix + part.text.strip())
        elif isinstance(part, ToolCallPart):
            call = json.dumps(part.input, ensure_ascii=False, default=str)
            lines.append(f"→ {part.name} {_middle(call, MAX_CALL_CHARS)}")
        elif isinstance(part, ToolResultPart):
            failed = " (failed)" if part.is_error else ""
            lines.append(f"← {part.name}{failed}: {_middle(part.output, MAX_RESULT_CHARS)}")
    return "\n".join(lines)


def _middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} […{len(text) - 2 * half:,} characters…] {text[-half:]}"


_HEADING = re.compile(r"^#{1,4}\s*(.+?)\s*:?\s*$")


def answer_problem(answer: str, tokens: int, max_tokens: int) -> str | None:
    """Why a model's answer cannot be the summary (None: it can): empty, a section missing or
    empty, or over `max_tokens` (`tokens` is the answer counted by the session's counter)."""
    if not answer.strip():
        return "an empty answer"
    bodies: dict[str, list[str]] = {}
    current: str | None = None
    for line in answer.splitlines():
        heading = _HEADING.match(line.strip())
        if heading is not None:
            name = heading.group(1).strip().strip("*").strip().lower()
            current = next((s for s in SECTIONS if s.lower() == name), None)
            if current is not None:
                bodies.setdefault(current, [])
            continue
        if current is not None and line.strip():
            bodies[current].append(line)
    missing = [s for s in SECTIONS if s not in bodies]
    if missing:
        return "no section " + ", ".join(f'"## {s}"' for s in missing)
    empty = [s for s in SECTIONS if not bodies[s]]
    if empty:
        return "empty section " + ", ".join(f'"## {s}"' for s in empty)
    if tokens > max_tokens:
        return f"{tokens:,} tokens, over the {max_tokens:,} asked for"
    return None
