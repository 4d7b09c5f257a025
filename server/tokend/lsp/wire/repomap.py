"""The repomap feature on the wire (protocol.md): repoMap/get. Budgets and figures in tokens."""

from __future__ import annotations

import attrs


@attrs.frozen
class FocusParams:
    files: list[str] = attrs.Factory(list)
    identifiers: list[str] = attrs.Factory(list)
    text: str = ""


@attrs.frozen
class RepoMapParams:
    session_id: str
    budget_tokens: int | None = None
    focus: FocusParams | None = None


@attrs.frozen
class RankedFileWire:
    path: str
    score: float  # rounded to 6 places


@attrs.frozen
class RepoMapResult:
    text: str
    tokens: int
    files: list[RankedFileWire]
    basis: str
    budget_tokens: int | None
