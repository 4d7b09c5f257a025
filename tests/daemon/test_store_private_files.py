"""The conversation database is private whatever the umask: data dir 0700, the SQLite file and
its -wal/-shm files 0600, on the real `tokend serve` (the default data folder); the other cases on
the same server in the test's process (tests/in_process.py).

Found: the SQLite file was 0644 in a 0755 folder; as another uid the probe read a stored tool
output holding a key.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

SECRET_OUTPUT = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    previous = os.umask(0o022)  # the usual umask: files 0644, folders 0755 unless told
    try:
        with real_daemons(monkeypatch) as running:
            yield running
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _store_a_secret(daemons: Daemons, *, in_process: bool = False) -> None:
    """A session with a tool result, written while the server runs (the -wal/-shm exist): the
    real `tokend serve`, or (`in_process`) `tokend lsp --standalone`'s server in this process
    (tests/in_process.py), which opens the store through the same code under this umask."""
    client: LspClient
    if in_process:
        client = daemons.standalone()
    else:
        daemons.serve()
        client = LspClient.unix(paths.socket_path())
    client.initialize("agent")
    sid = client.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
    call = {"type": "toolCall", "callId": "c1", "name": "bash", "input": {"cmd": "env"}}
    result = {"type": "toolResult", "callId": "c1", "name": "bash", "output": SECRET_OUTPUT}
    for role, part in (("assistant", call), ("tool", result)):
        message = {"role": role, "parts": [part]}
        assert "result" in client.request("session/append", {"sessionId": sid, "message": message})


def _database_files(database: Path) -> dict[str, int]:
    return {
        path.name: _mode(path)
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"))
        if path.exists()
    }


def test_the_default_data_dir_and_database_are_private(
    daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOKEND_DATABASE_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(daemons.base / "data"))
    _store_a_secret(daemons)
    data_dir = daemons.base / "data" / "tokend"
    assert _mode(data_dir) == 0o700
    files = _database_files(data_dir / "tokend.sqlite3")
    assert files == {
        "tokend.sqlite3": 0o600,
        "tokend.sqlite3-wal": 0o600,
        "tokend.sqlite3-shm": 0o600,
    }


def test_files_an_older_tokend_left_readable_are_made_private(
    daemons: Daemons, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = daemons.base / "data" / "tokend"
    data_dir.mkdir(parents=True, mode=0o755)
    database = data_dir / "tokend.sqlite3"
    sqlite3.connect(database).close()  # 0644, as SQLite makes it under this umask
    assert _mode(database) == 0o644 and _mode(data_dir) == 0o755
    monkeypatch.delenv("TOKEND_DATABASE_URL")
    monkeypatch.setenv("XDG_DATA_HOME", str(daemons.base / "data"))
    _store_a_secret(daemons, in_process=True)
    assert _mode(data_dir) == 0o700
    assert set(_database_files(database).values()) == {0o600}


def test_a_database_in_a_folder_of_the_users_choosing_is_private_too(daemons: Daemons) -> None:
    """TOKEND_DATABASE_URL points into base (0700 by mkdtemp): the folder is the user's and is
    left alone, the files are made 0600."""
    folder = daemons.base
    os.chmod(folder, 0o755)
    _store_a_secret(daemons, in_process=True)
    assert _mode(folder) == 0o755
    files = _database_files(folder / "tokend.sqlite3")
    assert files == {
        "tokend.sqlite3": 0o600,
        "tokend.sqlite3-wal": 0o600,
        "tokend.sqlite3-shm": 0o600,
    }
