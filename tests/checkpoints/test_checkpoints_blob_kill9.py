"""kill -9 during the first walk leaves no torn or missing saved state, packed or loose.

The real `tokend lsp --standalone` opens a folder of small files and a few big ones (loose
blobs) and is killed with SIGKILL while its checkpointer saves them, TRIALS times; after each
kill every state the store lists reads back whole (its bytes hash to its name), every state a
baseline names is there (packed states wait in memory for the next write), and a last run
finishes the walk with every file's bytes saved. Oracle: sha256 of the bytes read back, and
the files on disk.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lsp_client import LspClient
from tokend.adapters.checkpoint_store import CheckpointStore

SMALL_FILES = 6_000
BIG_FILES = 6
TRIALS = 3
WAIT_SECONDS = 60.0  # how long a walk may take on a loaded machine (not a figure)


def _tree(root: Path) -> dict[str, bytes]:
    files = {}
    for i in range(SMALL_FILES):
        files[f"d{i // 100}/f{i}.txt"] = f"value {i} = {i * 7919}\n".encode()
    for i in range(BIG_FILES):
        files[f"big/b{i}.bin"] = os.urandom(150_000)  # over the packed limit: loose files
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def _start(root: Path) -> tuple[subprocess.Popen[bytes], LspClient]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokend", "lsp", "--standalone"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    client = LspClient.process(proc)
    reply = client.request(
        "initialize",
        {"processId": None, "rootUri": root.as_uri(), "capabilities": {}},
        timeout=WAIT_SECONDS,
    )
    assert "result" in reply, reply
    client.notify("initialized", {})
    return proc, client


def _saved(index: Path) -> int:
    if not index.exists():
        return 0
    db = sqlite3.connect(index, timeout=10)
    try:
        return int(db.execute("SELECT count(*) FROM blobs").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not made yet
        return 0
    finally:
        db.close()


def _check_whole(folder: Path) -> int:
    """Every state the store lists reads back whole, and every state a baseline names is
    listed; how many there are."""
    store = CheckpointStore(folder)  # opened first: it recovers the killed process's WAL
    db = sqlite3.connect(folder / "index.sqlite3")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        shas = [s for (s,) in db.execute("SELECT sha FROM blobs")]
        referred = {s for (s,) in db.execute("SELECT sha FROM baseline WHERE kept = 1")}
    finally:
        db.close()
    assert referred <= set(shas), "a baseline names a state whose bytes were never written"
    try:
        for sha in shas:
            data = store.blob(sha)
            assert data is not None and hashlib.sha256(data).hexdigest() == sha, sha
        return len(shas)
    finally:
        store.close()


def test_kill_9_during_the_first_walk_tears_no_saved_state(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    files = _tree(root)
    folder = Path(os.environ["XDG_DATA_HOME"]) / "tokend" / "checkpoints"
    index = folder / "index.sqlite3"
    saved = 0
    for _trial in range(TRIALS):
        proc, _client = _start(root)
        deadline = time.monotonic() + WAIT_SECONDS
        while _saved(index) < saved + 300:  # the walk is saving this run's states
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"the walk saved nothing new after {saved} states")
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        saved = _check_whole(folder)
        assert saved < len(files), "killed after the walk: make the tree bigger"

    proc, client = _start(root)
    sid = client.request("session/create", {"model": "gpt-4o", "workspaceUri": root.as_uri()})
    sid = sid["result"]["sessionId"]
    message = {"role": "user", "parts": [{"type": "text", "text": "go"}]}
    client.request("session/append", {"sessionId": sid, "message": message})
    deadline = time.monotonic() + WAIT_SECONDS
    while not client.request("checkpoint/list", {"sessionId": sid})["result"]["watching"]:
        assert time.monotonic() < deadline, "the walk never finished"
        time.sleep(0.1)
    client.request("shutdown")
    client.notify("exit")
    proc.wait(WAIT_SECONDS)

    store = CheckpointStore(folder)
    kept = store.baseline(root.resolve().as_uri())
    assert set(kept) == set(files)
    for rel, data in files.items():
        assert store.blob(kept[rel].sha) == data, rel
    store.close()
    assert _check_whole(folder) == len(files)
