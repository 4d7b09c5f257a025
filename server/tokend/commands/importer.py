"""`tokend import claude-code FILE`: a Claude Code JSONL transcript into a tokend session."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tokend.core.errors import InvalidParams
from tokend.core.transcript import (
    CompactionBoundary,
    ProviderCall,
    TranscriptMessage,
    parse_transcript,
)
from tokend.core.types import TextPart
from tokend.service.factory import build_service
from tokend.service.service import TokendService

CLAUDE_CODE_WINDOW = 200_000  # Claude Code runs Claude at the standard window unless told "[1m]"


@dataclass(frozen=True)
class ImportOutcome:
    session_id: str
    messages: int
    calls: int
    compactions: int


def import_events(
    service: TokendService,
    path: Path,
    context_window: int | None = None,
    workspace_uri: str | None = None,
) -> ImportOutcome:
    """Append the transcript's messages, usage and compactions to a new session."""
    try:
        events = parse_transcript(path.read_text(encoding="utf-8").splitlines())
    except (OSError, ValueError) as exc:
        raise InvalidParams(f"cannot import {path}: {exc}") from None
    calls = [e for e in events if isinstance(e, ProviderCall)]
    if not calls:
        raise InvalidParams(f"{path} holds no provider call: is it a Claude Code transcript?")
    model = calls[0].model or "claude-opus-4-6"
    info = service.catalog.get(model)
    if context_window is None and info.provider == "anthropic" and "[1m]" not in model:
        context_window = min(info.context_window, CLAUDE_CODE_WINDOW)
    sid = service.create_session(
        model,
        title=f"imported: {path.name}",
        workspace_uri=workspace_uri,
        context_window=context_window,
    ).id
    pending: ProviderCall | None = None
    counts = {"messages": 0, "compactions": 0}
    boundary_next = False
    for event in events:
        if isinstance(event, ProviderCall):
            pending = event
        elif isinstance(event, CompactionBoundary):
            boundary_next = True
        elif isinstance(event, TranscriptMessage):
            if boundary_next:
                summary = _text(event) if event.compact_summary else "(compacted by Claude Code)"
                service.append_boundary(sid, summary)
                counts["compactions"] += 1
                boundary_next = False
                if event.compact_summary:
                    continue
            usage = pending.usage if pending and event.role == "assistant" else None
            call_model = pending.model if pending and event.role == "assistant" else None
            service.append(sid, event.role, list(event.parts), usage=usage, model=call_model)
            counts["messages"] += 1
            if event.role == "assistant":
                pending = None
    return ImportOutcome(sid, counts["messages"], len(calls), counts["compactions"])


def _text(message: TranscriptMessage) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def import_claude_code(
    path: Path, database_url: str | None, context_window: int | None, as_json: bool, out: TextIO
) -> int:
    service = build_service(Path.cwd(), database_url)
    try:
        outcome = import_events(service, path, context_window, Path.cwd().resolve().as_uri())
        snapshot = service.snapshot(outcome.session_id)
    finally:
        service.close()
    if as_json:
        figures = {
            "sessionId": outcome.session_id,
            "messages": outcome.messages,
            "calls": outcome.calls,
            "compactions": outcome.compactions,
            "usedTokens": snapshot.used_tokens,
        }
        out.write(json.dumps(figures) + "\n")
    else:
        out.write(
            f"imported {outcome.messages} messages, {outcome.calls} provider calls and "
            f"{outcome.compactions} compactions into session {outcome.session_id}\n"
            f"gauge: {snapshot.used_tokens:,} / {snapshot.context_window:,} tokens "
            f"({snapshot.used_percentage:.1f}%)\n"
        )
    return 0
