"""Checkpoints: one workspace file's state now (hash, size, mtime, mode), its bytes saved in the
checkpoint store unless the per-file or per-turn cap says no, and the logged change between two
states."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from tokend.core.checkpoints.turns import CheckpointConfig, FileChange, Origin
from tokend.core.workspace.files import OpenedFile, PathConflict, Seen, sha256_bytes
from tokend.service.ports import CheckpointIndex, WorkspaceFiles


@dataclass
class TurnBytes:
    """Bytes saved in a workspace since its last user turn started (the per-turn cap)."""

    saved: int = 0


def capture(
    files: WorkspaceFiles,
    store: CheckpointIndex,
    config: CheckpointConfig,
    root: Path,
    rel: str,
    turn: TurnBytes | None,
    *,
    fast: bool = False,
) -> tuple[Seen | None, str | None]:
    """A file's state now, its bytes saved unless a cap says no (the note says which).
    None when it is not a regular file. `turn` counts the bytes against the turn's cap;
    `fast` compresses for speed (the first walk)."""
    try:
        with files.open_file(root, rel, follow_inside=False) as opened:
            st = opened.st
            if not stat.S_ISREG(st.st_mode):
                return None, None
            mode = stat.S_IMODE(st.st_mode)
            if st.st_size > config.max_file_bytes:
                cap = config.max_file_bytes
                note = f"{st.st_size:,} bytes, over the {cap:,}-byte per-file cap: not saved"
                sha = _hash_opened(opened)
                return Seen(sha, st.st_size, st.st_mtime_ns, False, mode), note
            data = files.read_opened(opened)
    except (OSError, PathConflict):
        return None, None  # gone, or a symlink now on its way: not a file of the workspace
    if turn is not None and turn.saved + len(data) > config.max_turn_bytes:
        sha = sha256_bytes(data)
        if not store.has_blob(sha):
            cap = config.max_turn_bytes
            note = f"over the {cap:,}-byte per-turn cap: not saved"
            return Seen(sha, len(data), st.st_mtime_ns, False, mode), note
    sha, added = store.put_blob(data, time.time(), fast=fast)
    if turn is not None:
        turn.saved += added
    return Seen(sha, len(data), st.st_mtime_ns, True, mode), None


def state_change(
    rel: str, old: Seen | None, new: Seen | None, at: float, origin: Origin, note: str | None
) -> FileChange:
    """The log entry of a path going from state `old` to `new` (None: absent)."""
    return FileChange(
        0,
        rel,
        old.sha if old else None,
        new.sha if new else None,
        at,
        origin,
        after_kept=new.kept if new else True,
        note=note,
        before_mode=old.mode if old else None,
    )


def _hash_opened(opened: OpenedFile) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: os.read(opened.fd, 1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()
