"""The assembly feature on the wire (protocol.md): context/assemble. Figures in tokens; the
messages, system blocks, tools and request fields are the provider's own JSON, sent as built."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from tokend.lsp.wire.common import flattened, omitted


@attrs.frozen
class FileParams:
    path: str
    text: str


@attrs.frozen
class ContextAssembleParams:
    session_id: str
    format: Literal["openai", "anthropic"] = "openai"
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    examples: list[dict[str, Any]] | None = None
    read_only_files: list[FileParams] | None = None
    repo_map: str | None = None
    chat_files: list[FileParams] | None = None
    reminder: str | None = None
    budget_injection: Literal["native", "synthetic", "off"] | None = None
    context_editing: bool | None = None  # Anthropic's context_management edits


@attrs.frozen
class ChunkWire:
    name: str
    tokens: int


@attrs.frozen
class CacheBreakpointWire:
    chunk: str
    message_index: int | None  # into `messages`; null for tools and Anthropic's system


@attrs.frozen
class AssembleResult:
    messages: list[Any]
    total_tokens: int
    chunks: list[ChunkWire]
    cache_breakpoints: list[CacheBreakpointWire]
    warnings: list[str]
    system: list[Any] | None = omitted()  # Anthropic's system blocks
    tools: list[Any] | None = omitted()  # sent when there are any
    request_fields: dict[str, Any] = flattened()  # contextManagement, outputConfig
    betas: list[str] | None = omitted()  # the anthropic-beta values the request needs
