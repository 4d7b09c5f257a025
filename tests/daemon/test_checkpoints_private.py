"""The workspace cache and the checkpoint store are private whatever the umask: their folders
0700, their files (SQLite files with -wal/-shm, loose blobs) 0600; what an older tokend left
readable is narrowed at start, and its saved states still restore.
The server is `tokend lsp --standalone`'s in the test's process (tests/in_process.py, through
Daemons.standalone): the same app builds both stores as in `tokend serve`, under this process's
umask; the daemon's own files keep their process test (test_store_private_files.py's first).

Found (issue 17): `workspace-cache.sqlite3` and the checkpoint store (index and blobs) were 0644
files in 0755 folders, protected only by the data folder's 0700. Oracle: the modes on disk, and
the bytes a restore writes back.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from bench.baseline import BEFORE_TRUST_REV, ROOT

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient

WAIT_SECONDS = 30.0  # how long a condition may take on a loaded machine (not a figure)


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    previous = os.umask(0o022)  # the usual umask: files 0644, folders 0755 unless told
    try:
        with real_daemons(monkeypatch) as running:
            monkeypatch.setenv("XDG_DATA_HOME", str(running.base / "data"))
            yield running
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _modes(folder: Path) -> dict[str, int]:
    """Every folder and file under `folder` (itself included) -> its mode."""
    found = {".": _mode(folder)}
    for path in folder.rglob("*"):
        found[path.relative_to(folder).as_posix()] = _mode(path)
    return found


def _request(client: LspClient, method: str, params: dict[str, Any]) -> Any:
    reply = client.request(method, params)
    assert "result" in reply, reply
    return reply["result"]


def _until(what: str, check: Any) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.05)


def _append(client: LspClient, sid: str, role: str, part: dict[str, Any]) -> str:
    message = {"role": role, "parts": [part]}
    return str(
        _request(client, "session/append", {"sessionId": sid, "message": message})["messageId"]
    )


def _session_watching(client: LspClient, root: Path) -> tuple[str, str]:
    """A session on `root` with a user turn started, once its first walk is saved:
    (session id, the user message's id)."""
    sid = _request(client, "session/create", {"model": "gpt-4o", "workspaceUri": root.as_uri()})[
        "sessionId"
    ]
    first = _append(client, sid, "user", {"type": "text", "text": "tidy the notes"})
    _until(
        "the first walk",
        lambda: _request(client, "checkpoint/list", {"sessionId": sid})["watching"],
    )
    return sid, first


def _assert_private(data_dir: Path) -> None:
    cache = data_dir / "workspace-cache.sqlite3"
    assert _mode(data_dir) == 0o700
    assert {p.name: _mode(p) for p in data_dir.glob("workspace-cache.sqlite3*")} == {
        cache.name: 0o600,
        f"{cache.name}-wal": 0o600,
        f"{cache.name}-shm": 0o600,
    }
    store = _modes(data_dir / "checkpoints")
    folders = {p for p in store if (data_dir / "checkpoints" / p).is_dir()}
    assert {p: m for p, m in store.items() if p in folders} == dict.fromkeys(folders, 0o700)
    assert {p: m for p, m in store.items() if p not in folders} == dict.fromkeys(
        set(store) - folders, 0o600
    )
    assert {"index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"} <= set(store)


def test_the_workspace_cache_and_checkpoint_store_are_private(daemons: Daemons) -> None:
    root = daemons.base / "ws"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n")
    (root / "big.bin").write_bytes(os.urandom(200_000))  # a loose blob: does not compress
    client = daemons.standalone()
    client.initialize("agent")
    _session_watching(client, root)

    data_dir = daemons.base / "data" / "tokend"
    _assert_private(data_dir)
    loose = [p for p in (data_dir / "checkpoints" / "blobs").rglob("*") if p.is_file()]
    assert len(loose) == 1, loose  # the big file's: its mode was checked too


def _old_checkpoint_store(tmp: Path) -> ModuleType:
    """The checkpoint store module of tokend before this change (one file per blob), from git."""
    shown = subprocess.run(
        [
            "git",
            "-C",
            str(ROOT),
            "show",
            f"{BEFORE_TRUST_REV}:server/tokend/adapters/checkpoint_store.py",
        ],
        capture_output=True,
        text=True,
    )
    if shown.returncode != 0:
        pytest.fail(f"this clone lacks {BEFORE_TRUST_REV}, the older tokend: {shown.stderr}")
    source = tmp / "old_checkpoint_store.py"
    # It imports today's core types, which now live in core's checkpoints package (issue 18's move).
    moved = shown.stdout.replace(
        "from tokend.core.checkpoints import", "from tokend.core.checkpoints.turns import"
    )
    assert moved != shown.stdout, "the older store no longer imports core.checkpoints' types"
    source.write_text(moved)
    spec = importlib.util.spec_from_file_location("old_checkpoint_store", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_an_older_tokends_readable_store_is_narrowed_and_its_states_still_restore(
    daemons: Daemons,
) -> None:
    root = daemons.base / "ws"
    root.mkdir()
    notes = root / "notes.md"
    original = b"# Notes\n\nwritten before the upgrade\n"
    notes.write_bytes(original)
    data_dir = daemons.base / "data" / "tokend"
    data_dir.mkdir(parents=True, mode=0o755)
    cache = sqlite3.connect(data_dir / "workspace-cache.sqlite3")
    cache.execute("PRAGMA journal_mode=WAL")
    cache.execute("CREATE TABLE t (x)")
    old = _old_checkpoint_store(daemons.base)
    store = old.CheckpointStore(data_dir / "checkpoints")
    sha, _ = store.put_blob(original, time.time())
    info = notes.stat()
    store.set_baseline(
        root.resolve().as_uri(), {"notes.md": old.Seen(sha, info.st_size, info.st_mtime_ns, True)}
    )
    loose = data_dir / "checkpoints" / "blobs" / sha[:2] / sha
    assert (_mode(data_dir), _mode(loose), _mode(loose.parent)) == (0o755, 0o644, 0o755)
    store.close()
    cache.close()

    client = daemons.standalone()
    client.initialize("agent")
    sid, first = _session_watching(client, root)
    call = {"type": "toolCall", "callId": "c1", "name": "Write", "input": {"path": "notes.md"}}
    _append(client, sid, "assistant", call)
    notes.write_bytes(b"# Notes\n\nrewritten by the agent\n")

    def logged() -> bool:
        turns = _request(client, "checkpoint/list", {"sessionId": sid})["turns"]
        return any(f["path"] == "notes.md" for t in turns for f in t["files"])

    _until("the agent's change", logged)
    result = {"type": "toolResult", "callId": "c1", "name": "Write", "output": "ok"}
    _append(client, sid, "tool", result)
    _append(client, sid, "assistant", {"type": "text", "text": "done"})
    done = _request(client, "checkpoint/restore", {"sessionId": sid, "toMessageId": first})

    assert done["files"] == [{"path": "notes.md", "action": "write"}]
    assert notes.read_bytes() == original  # read back from the older tokend's loose file
    _assert_private(data_dir)
