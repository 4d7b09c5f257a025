"""What a client asks `context/assemble` for (the assembly and the workspace filler share it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AssembleInput:
    """What the client sent; empty files and a None repo map are filled from the workspace."""

    format: str = "openai"
    system: str | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    examples: Sequence[Mapping[str, Any]] = ()
    read_only_files: Sequence[tuple[str, str]] = ()
    repo_map: str | None = None
    chat_files: Sequence[tuple[str, str]] = ()
    reminder: str | None = None
    budget_injection: str | None = None  # native | synthetic | off; None: [context] setting
    context_editing: bool | None = None  # Anthropic's edits; None: [context_editing] enabled
    extra: dict[str, Any] = field(default_factory=dict)
