"""Small saved states are packed in the checkpoint index, not one file each; big ones stay files.

Found (issue 17): a workspace of 100,000 small files (7.4 MB) became 100,000 blob files and
440 MB on disk. Oracle: the files in the store's folder, and the bytes of the workspace's files.
"""

from __future__ import annotations

import hashlib
import os
import random
import time
from pathlib import Path

from tests.checkpoints.conftest import Agent
from tokend.adapters.checkpoint_store import CheckpointStore

SMALL_FILES = 300


def _loose_files(store: Path) -> list[Path]:
    return [p for p in (store / "blobs").rglob("*") if p.is_file()]


def test_a_tree_of_small_files_is_packed_and_a_big_file_stays_loose(
    agent: Agent, workspace: Path, tmp_path: Path
) -> None:
    for i in range(SMALL_FILES):
        folder = workspace / "many" / f"d{i // 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"value {i} = {i * 7919}\n")
    big = random.Random(17).randbytes(300_000)  # does not compress: over the packed limit
    (workspace / "big.bin").write_bytes(big)

    agent.user("start")

    store = agent.checkpoints.store
    kept = store.baseline(agent.key)
    on_disk = {
        p.relative_to(workspace).as_posix(): p.read_bytes()
        for p in workspace.rglob("*")
        if p.is_file() and "build" not in p.parts
    }
    assert set(kept) == set(on_disk)
    for rel, data in on_disk.items():
        assert kept[rel].sha == hashlib.sha256(data).hexdigest()
        assert store.blob(kept[rel].sha) == data, rel
    loose = _loose_files(tmp_path / "checkpoints")
    assert [p.name for p in loose] == [hashlib.sha256(big).hexdigest()]


def test_a_store_reopened_reads_packed_and_loose_states(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    small, big = b"print('hello')\n", os.urandom(200_000)
    store = CheckpointStore(folder)
    small_sha, small_added = store.put_blob(small, 1.0)
    big_sha, big_added = store.put_blob(big, 1.0)
    assert store.put_blob(small, 2.0) == (small_sha, 0)  # known: nothing added
    store.close()

    again = CheckpointStore(folder)
    assert again.blob(small_sha) == small and again.blob(big_sha) == big
    assert again.blob(hashlib.sha256(b"never saved").hexdigest()) is None
    figures = again.figures()
    assert (figures.blobs, figures.raw_bytes) == (2, len(small) + len(big))
    assert figures.stored_bytes == small_added + big_added
    again.close()


def test_prune_drops_packed_and_loose_states_nothing_refers_to(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    store = CheckpointStore(folder)
    small_sha, _ = store.put_blob(b"gone soon\n", 1.0)
    big_sha, _ = store.put_blob(os.urandom(200_000), 1.0)
    assert len(_loose_files(folder)) == 1
    assert store.prune(before=10.0) == 2
    assert store.blob(small_sha) is None and store.blob(big_sha) is None
    assert _loose_files(folder) == []
    store.close()


def test_a_killed_writers_old_temporary_file_is_removed_at_open(tmp_path: Path) -> None:
    """A loose state is written under blobs/tmp first; one a killed writer left an hour ago
    goes at the next open, one being written now stays."""
    folder = tmp_path / "checkpoints"
    CheckpointStore(folder).close()
    left = folder / "blobs" / "tmp" / "left-by-a-killed-writer"
    fresh = folder / "blobs" / "tmp" / "being-written"
    left.parent.mkdir(exist_ok=True)
    left.write_bytes(b"half a blob")
    fresh.write_bytes(b"half a blob")
    two_hours_ago = time.time() - 7200
    os.utime(left, (two_hours_ago, two_hours_ago))
    CheckpointStore(folder).close()
    assert not left.exists() and fresh.exists()
