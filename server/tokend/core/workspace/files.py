"""The vocabulary of a workspace's files as the checkpointer, restores and reads speak of them:
a file's state as last seen (`Seen`) and its hash, a row of the restore journal, and the
refusals of touching a path (adapters.workspace_fs raises them; callers catch them here)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse


def workspace_folder(uri: str) -> Path | None:
    """The folder of a file:// workspace URI (None for other schemes)."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def sha256_bytes(data: bytes) -> str:
    """The hex SHA-256 of `data` (how a file state is named)."""
    return hashlib.sha256(data).hexdigest()


class OpenedFile(Protocol):
    """A file of the workspace opened read-only: its descriptor and its stat."""

    @property
    def fd(self) -> int: ...

    @property
    def st(self) -> os.stat_result: ...


@dataclass(frozen=True, slots=True)
class Seen:
    """A file as last seen: its hash, size, mtime, and whether its bytes are saved."""

    sha: str
    size: int
    mtime_ns: int
    kept: bool
    mode: int | None = None  # permission bits (None: not recorded)


@dataclass(frozen=True, slots=True)
class JournaledRestore:
    """A row of the restore journal (`plan`, `conversation`, `outcome`: JSON text)."""

    id: int
    workspace: str
    session_id: str
    to_message_id: str
    started_at: float
    plan: str
    conversation: str | None
    state: str  # running | done | undone | interrupted
    outcome: str | None
    pid: int | None  # the process that ran it


class PathConflict(Exception):
    """`path` cannot be written or deleted safely now (`reason` says why, for the user)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class PathOutside(PathConflict):
    """`path` now leads outside the workspace (through a symlink): not read."""


class FolderMissing(PathConflict):
    """A folder on `path`'s way does not exist (so neither does the file)."""
