"""Context assembly: what the next provider request holds, in a cache-friendly order, within the limit.

Order (stable prefix first): tools -> system -> examples -> read-only files -> repo map ->
history -> chat files -> current turn -> reminder. The current turn is the last user turn of
the history and everything after it (the tool results of the turn in progress). The reminder
is sent only if it fits; when even without it the context exceeds the limit, ContextOverflow
says what to drop. All figures are tokens; nothing is tokenized here: counts come cached on
the parts, pre-counted on the inputs, or from the `count` callable the caller passes.

The inputs besides the history live in context_inputs.py, the overflow's suggestions in
overflow.py, the per-session cache of rendered messages in render_cache.py, the cache
breakpoints in cache_marks.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.assembly.cache_marks import CacheBreakpoint, anthropic_prefix, mark_breakpoints
from tokend.core.assembly.context_inputs import (
    CountedText,
    ExampleTurn,
    FileText,
    examples_messages,
    file_block_text,
    files_messages,
    text_messages,
)
from tokend.core.assembly.overflow import context_overflow
from tokend.core.assembly.render_cache import RenderCache, system_message
from tokend.core.assembly.wire_formats import (
    WIRE_FORMATS,
    WireFormat,
    WireMessage,
    part_is_sent,
    render_message,
    split_system_blocks,
)
from tokend.core.assembly.wire_join import Joiner
from tokend.core.compaction.prune import is_user_turn
from tokend.core.counting.render import PRUNED_TOOL_RESULT, part_text, to_json_text
from tokend.core.errors import ContextOverflow, InvalidParams
from tokend.core.types import CompactionPart, Message, StoredPart

CHUNKS = (
    "tools",
    "system",
    "examples",
    "readOnlyFiles",
    "repoMap",
    "history",
    "chatFiles",
    "current",
    "reminder",
)


@dataclass(frozen=True, slots=True)
class AssemblyRequest:
    """What to assemble. `limit_tokens` is the effective input limit; `history` runs from the
    last compaction boundary, oldest first. Tokens left None are counted with `count`.
    `system_tokens` and `tools_tokens` are taken as given (include their framing);
    `message_overhead` is added for every message sent, the synthetic ones holding
    examples, files, the repo map and the reminder included."""

    format: WireFormat
    limit_tokens: int
    history: Sequence[Message] = ()
    system: str | None = None
    system_tokens: int | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    tools_tokens: int | None = None
    examples: Sequence[ExampleTurn] = ()
    read_only_files: Sequence[FileText] = ()
    repo_map: CountedText | None = None
    chat_files: Sequence[FileText] = ()
    reminder: CountedText | None = None
    message_overhead: Callable[[Message], int] = lambda _message: 0  # framing tokens per message
    reply_priming_tokens: int = 0  # the request's reply priming, counted in "current"
    count: Callable[[str], int] | None = None
    pruned_result_tokens: int | None = None  # count of PRUNED_TOOL_RESULT
    render_cache: RenderCache | None = None
    # Known totals per message id (parts + framing, pruned parts as placeholders), counted for
    # THIS format; a caller that keeps them saves summing every part on every assembly.
    message_tokens: Mapping[str, int] | None = None
    # With `message_tokens`: their sum over the whole `history` (a log keeps it as it grows,
    # core.session.message_log); the history chunk is then that less the current turn's.
    history_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Assembly:
    format: WireFormat
    messages: tuple[WireMessage, ...]
    system: tuple[dict[str, Any], ...] | None  # Anthropic only: the system text blocks
    tools: tuple[Mapping[str, Any], ...]
    total_tokens: int
    chunks: tuple[tuple[str, int], ...]  # in CHUNKS order, adding up to total_tokens
    cache_breakpoints: tuple[CacheBreakpoint, ...]
    warnings: tuple[str, ...]
    # Provider request fields besides these (the reply's key, the value to send as it is) and
    # the `anthropic-beta` values they need: core.assembly.context_editing, core.assembly.budget_injection.
    extras: tuple[tuple[str, Any], ...] = ()
    betas: tuple[str, ...] = ()


def assemble(request: AssemblyRequest) -> Assembly:
    """The request that fits `limit_tokens` (raises ContextOverflow when none does)."""
    req = request
    if req.format not in WIRE_FORMATS:
        raise InvalidParams(f"unknown format {req.format!r}; expected one of {WIRE_FORMATS}")
    split = len(req.history)
    for index in range(len(req.history) - 1, -1, -1):
        if is_user_turn(req.history[index]):
            split = index
            break
    groups: dict[str, Sequence[Message]] = {
        "examples": examples_messages(req.examples),
        "readOnlyFiles": files_messages("readOnlyFiles", req.read_only_files),
        "repoMap": text_messages("repoMap", req.repo_map),
        "history": req.history[:split],
        "chatFiles": files_messages("chatFiles", req.chat_files),
        "current": req.history[split:],
        "reminder": text_messages("reminder", req.reminder),
    }
    tokens = {
        "tools": _tools_tokens(req),
        "system": _text_tokens(req.system, req.system_tokens, req.count, "the system prompt"),
    }
    pruned_tokens = _pruned_tokens(req)
    known_total = req.history_tokens if req.message_tokens is not None else None
    for name, messages in groups.items():
        known = name == "history" and known_total is not None  # no lookup per message
        tokens[name] = 0 if known else _messages_tokens(messages, req, pruned_tokens)
    if known_total is not None:
        tokens["history"] = known_total - tokens["current"]
    tokens["current"] += req.reply_priming_tokens
    warnings: list[str] = []
    total = sum(tokens.values()) - tokens["reminder"]
    if tokens["reminder"]:
        if total + tokens["reminder"] <= req.limit_tokens:
            total += tokens["reminder"]
        else:
            warnings.append(f"reminder dropped: its {tokens['reminder']:,} tokens do not fit")
            tokens["reminder"] = 0
            groups["reminder"] = ()
    if total > req.limit_tokens:
        raise _overflow(req, tokens, total)
    return _build(req, groups, tokens, total, warnings)


def _build(
    req: AssemblyRequest,
    groups: Mapping[str, Sequence[Message]],
    tokens: Mapping[str, int],
    total: int,
    warnings: list[str],
) -> Assembly:
    cache = req.render_cache
    fmt = req.format
    joiner = Joiner(fmt)
    ends: dict[str, tuple[int, dict[str, Any]] | None] = {}
    if fmt == "openai" and req.system is not None:
        joiner.messages.append(system_message(req.system, cache))
        ends["system"] = joiner.end_position()
    summary_blocks: list[dict[str, Any]] = []  # Anthropic: summaries go to the system field
    for name, messages in groups.items():
        summary_led = fmt == "anthropic" and bool(messages) and _leads_with_summary(messages[0])
        if cache is not None and name == "history" and not summary_led:
            cache.joined_history.extend(joiner, messages, lambda ms: cache.render_all(ms, fmt))
        else:
            if cache is not None and name in ("history", "current"):
                rendered: Iterable[WireMessage] = cache.render_all(messages, fmt)
            else:
                rendered = (wire for message in messages for wire in render_message(message, fmt))
            if summary_led:
                blocks, rendered = split_system_blocks(list(rendered), fmt)
                summary_blocks.extend(blocks)
                if not rendered:
                    continue
            joiner.extend(rendered)
        if messages:
            ends[name] = joiner.end_position()
    out = joiner.finish()
    warnings.extend(joiner.warnings)
    breakpoints = mark_breakpoints(fmt, out, ends, bool(req.tools), req.system is not None)
    tools: tuple[Mapping[str, Any], ...] = tuple(req.tools)
    system = None
    if fmt == "anthropic":
        tools, system = anthropic_prefix(req.tools, req.system, summary_blocks)
    return Assembly(
        format=fmt,
        messages=tuple(out),
        system=system,
        tools=tools,
        total_tokens=total,
        chunks=tuple((name, tokens[name]) for name in CHUNKS),
        cache_breakpoints=tuple(breakpoints),
        warnings=tuple(warnings),
    )


def _leads_with_summary(message: Message) -> bool:
    """A window's first message renders a summary for the system field: tokend's, or another
    provider's compaction."""
    return message.summary or any(
        isinstance(sp.part, CompactionPart) and sp.part.provider not in (None, "anthropic")
        for sp in message.parts
    )


def _messages_tokens(messages: Sequence[Message], req: AssemblyRequest, pruned: int) -> int:
    overhead = req.message_overhead
    known = req.message_tokens or {}
    total = 0
    for message in messages:
        cached = known.get(message.id)
        if cached is not None:
            total += cached
            continue
        total += overhead(message)
        for stored in message.parts:
            if not part_is_sent(stored.part, message.role, req.format):
                continue  # e.g. reasoning the format never carries: it costs nothing
            if stored.compacted_at is not None:
                total += pruned
            elif stored.tokens is not None:
                total += stored.tokens
            else:
                total += _uncounted(stored, req.count)
    return total


def _uncounted(stored: StoredPart, count: Callable[[str], int] | None) -> int:
    if count is None:
        raise InvalidParams(f"part {stored.id} has no cached token count and no counter was given")
    return count(part_text(stored.part))


def _pruned_tokens(req: AssemblyRequest) -> int:
    if req.pruned_result_tokens is not None:
        return req.pruned_result_tokens
    return _text_tokens(PRUNED_TOOL_RESULT, None, req.count, "the pruned-result placeholder")


def _text_tokens(
    text: str | None, tokens: int | None, count: Callable[[str], int] | None, what: str
) -> int:
    if text is None:
        return 0
    if tokens is not None:
        return tokens
    if count is None:
        raise InvalidParams(f"{what} has no token count and no counter was given")
    return count(text)


def _tools_tokens(req: AssemblyRequest) -> int:
    if not req.tools:
        return 0
    return _text_tokens(to_json_text(list(req.tools)), req.tools_tokens, req.count, "the tools")


def _overflow(req: AssemblyRequest, tokens: Mapping[str, int], total: int) -> ContextOverflow:
    files = (
        (kind, path, _text_tokens(file_block_text(path, text), counted, req.count, path))
        for kind, group in (("chat file", req.chat_files), ("read-only file", req.read_only_files))
        for path, text, counted in group
    )
    return context_overflow(tokens, total, req.limit_tokens, files)
