"""What a file costs, as workspace/fileTokens and files/list report it (domain types)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Basis = Literal["exact", "estimate", "skipped"]


@dataclass(frozen=True, slots=True)
class FileFigure:
    """`tokens` of the file's text (0 when skipped); `size_bytes` on disk, or of the unsaved
    buffer's UTF-8 text when `dirty`; `reason` says why a file is skipped or how it was read."""

    path: str
    size_bytes: int
    tokens: int
    basis: Basis
    dirty: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class FileText:
    """A file's current text (the unsaved buffer when there is one) and its content hash."""

    path: str
    text: str
    sha256: str
    dirty: bool
    reason: str | None = None
