"""The seams only the service speaks of: `typing.Protocol`s the adapters implement, handed in
by the composition root (service/app.py), and tests fake in memory. Ports core speaks of too
(the session store, counters, the clock) are core.ports'.

- `ExactCounters`: the exact tokenizers (adapters.tokenizers.ExactTokenizers);
- `WorkspaceFiles`: reading and writing a workspace's files without leaving it
  (adapters.workspace_fs, the module itself);
- `CheckpointIndex`: the checkpoint store's states, logs, marks and restore journal
  (adapters.checkpoint_store.CheckpointStore);
- `WatchFactory`: a watch of a folder for written files (adapters.watch.PathWatch).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from tokend.core.checkpoints.turns import FileChange, TurnMark
from tokend.core.ports import CountCache, TokenCounter
from tokend.core.workspace.files import JournaledRestore, OpenedFile, Seen


class KeptCounter(TokenCounter, Protocol):
    """An exact counter whose counts are cached by content hash (core.ports.CountCache)."""

    def count_many(self, texts: Sequence[str], *, kept: bool = False) -> list[int]:
        """Tokens of each text; with `kept`, each count stays in the persistent cache whatever
        the text's length (texts every request repeats)."""
        ...


class ExactCounters(Protocol):
    """The exact tokenizers this process has (adapters.tokenizers.ExactTokenizers)."""

    def has_claude_families(self) -> bool:
        """Whether the Claude families' tokenizer (ctok) is installed."""
        ...

    def counter(self, tokenizer: str, cache: CountCache | None) -> KeptCounter: ...


class WorkspaceFiles(Protocol):
    """A workspace's files, every path walked from the root without leaving it: refusals are
    core.workspace.files' PathConflict (PathOutside: a symlink leads out), absence OSError."""

    def open_file(
        self, root: Path, rel: str, *, follow_inside: bool = True
    ) -> AbstractContextManager[OpenedFile]: ...

    def read_opened(self, opened: OpenedFile, limit: int | None = None) -> bytes: ...

    def read_bytes(
        self, root: Path, rel: str, limit: int | None = None, *, follow_inside: bool = True
    ) -> bytes: ...

    def reader(self, root: Path) -> AbstractContextManager[Callable[[str], bytes]]:
        """Files of `root` read in path order: each `read(rel)` as `read_bytes(root, rel)`,
        the folders the paths share opened once."""
        ...

    def stat_file(
        self, root: Path, rel: str, *, follow_inside: bool = True
    ) -> os.stat_result | None: ...

    def probe(self, root: Path, rel: str) -> None:
        """PathConflict when `rel` could not be written now."""
        ...

    def write_atomic(self, root: Path, rel: str, data: bytes, mode: int) -> os.stat_result: ...

    def delete(self, root: Path, rel: str, prune: bool = True) -> bool: ...

    def remove_temporary(self, root: Path, rel: str) -> bool:
        """Remove the temporary copy a write of `rel` left; whether there was one."""
        ...


class SavedStates(Protocol):
    """File states' bytes by hash, compressed and stored once."""

    def put_blob(self, data: bytes, at: float, *, fast: bool = False) -> tuple[str, int]:
        """Save `data`; (its hash, the bytes the store grew by)."""
        ...

    def has_blob(self, sha: str) -> bool: ...

    def blob(self, sha: str) -> bytes | None: ...


class FileLog(Protocol):
    """Each workspace's files as last seen (its baseline) and the log of their changes."""

    def baseline(self, workspace: str, paths: Sequence[str] | None = None) -> dict[str, Seen]: ...

    def baseline_under(self, workspace: str, folder: str) -> list[str]: ...

    def baseline_paths(self, workspace: str) -> list[str]: ...

    def set_baseline(self, workspace: str, seen: Mapping[str, Seen | None]) -> None: ...

    def add_changes(self, workspace: str, changes: Iterable[FileChange]) -> list[FileChange]: ...

    def set_moved(self, seq: int, moved_from: str | None, moved_to: str | None) -> None: ...

    def changes(self, workspace: str, since: float = 0.0) -> list[FileChange]: ...


class RestoreJournal(Protocol):
    """Restores journaled before their first write, so a restart settles one killed midway."""

    def begin_restore(
        self,
        workspace: str,
        session_id: str,
        to_message_id: str,
        plan: str,
        conversation: str | None,
    ) -> int: ...

    def end_restore(
        self, journal_id: int, state: str = "done", outcome: str | None = None
    ) -> None: ...

    def restores(self, state: str, session_id: str | None = None) -> list[JournaledRestore]: ...


class TurnMarks(Protocol):
    """When each session message was appended, and in which workspace."""

    def add(self, session_id: str, workspace: str, mark: TurnMark) -> None: ...

    def session(self, session_id: str) -> tuple[str | None, list[TurnMark]]:
        """The session's workspace and its marks in append order."""
        ...


class CheckpointIndex(SavedStates, FileLog, Protocol):
    """The checkpoint store (one per user): saved states, file logs, each session's turn marks
    (`marks`) and the restore journal (`journal`)."""

    @property
    def folder(self) -> Path:
        """Where the store lives (never checkpointed itself)."""
        ...

    @property
    def marks(self) -> TurnMarks: ...

    @property
    def journal(self) -> RestoreJournal: ...

    def prune(self, before: float) -> int:
        """Drop what was seen before `before` and the states nothing refers to any more."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class PathWatch(Protocol):
    """A folder watched for written files (polled where inotify cannot watch)."""

    def start(self) -> None: ...

    def stop(self) -> None:
        """Stop watching; its threads end soon after (`threads`, to join them)."""
        ...

    def threads(self) -> list[threading.Thread]: ...


class WatchFactory(Protocol):
    """Builds the watch of `root` calling `on_path(path)` from its thread for each file written
    there (the whole tree when `recursive`), and `on_notice(text)` for what the user should know
    (a folder polled)."""

    def __call__(
        self,
        root: Path,
        on_path: Callable[[Path], None],
        on_notice: Callable[[str], None],
        *,
        recursive: bool = True,
    ) -> PathWatch: ...
