"""The real daemon on a workspace that holds its own folders (an editor opened on the home
folder): what tokend writes there is never indexed, watched, checkpointed or mapped.

The home folder has the XDG data, state, cache and runtime folders under it (the data folder
reached through a symlink), and the sessions' SQLite file given by TOKEND_DATABASE_URL. The
oracles: the paths `workspace/fileTokens` lists, the `workspace/didChangeFileTokens` the client
receives while nobody touches a file, an independent inotify recorder (libc's inotify, not
watchdog) over the whole home folder, and the blob files of the checkpoint store on disk
across a restart.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.inotify_recorder import InotifyRecorder
from tests.lsp_client import LspClient
from tokend.daemon import paths

QUIET_SECONDS = 3.0
USER_FILES = {
    "src/app.py": "def main():\n    return helper()\n\n\ndef helper():\n    return 42\n",
    "src/util.py": "from src.app import helper\n\n\ndef twice():\n    return 2 * helper()\n",
    "notes.md": "Things to do.\n",
}


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Daemons, Path]]:
    with real_daemons(monkeypatch) as daemons:
        home = daemons.base / "home"
        for rel, text in USER_FILES.items():
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text(text)
        (home / ".local" / "share").mkdir(parents=True)
        (home / "data").symlink_to(home / ".local" / "share")  # XDG_DATA_HOME through a link
        (home / ".run").mkdir(mode=0o700)
        (home / "db").mkdir()
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
        monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(home / ".run"))
        monkeypatch.setenv("TOKEND_DATABASE_URL", f"sqlite:///{home}/db/sessions.sqlite3")
        yield daemons, home


def _start(daemons: Daemons, home: Path) -> tuple[LspClient, str]:
    """The daemon, a client, and a session of the home folder once its first walk is saved."""
    daemons.serve()
    client = LspClient.unix(paths.socket_path())
    assert "result" in client.initialize("own-folders-test")
    created = client.request("session/create", {"model": "gpt-4o", "workspaceUri": home.as_uri()})
    session = created["result"]["sessionId"]
    message = {"role": "user", "parts": [{"type": "text", "text": "tidy up src"}]}
    assert "result" in client.request("session/append", {"sessionId": session, "message": message})
    deadline = time.monotonic() + 60
    while not client.request("checkpoint/list", {"sessionId": session})["result"]["watching"]:
        assert time.monotonic() < deadline, "the first walk was not saved in 60 s"
        time.sleep(0.2)
    return client, session


def _stop(daemons: Daemons) -> None:
    serve = daemons.processes[-1]
    os.kill(serve.pid, signal.SIGTERM)
    try:
        serve.wait(timeout=30)
    except TimeoutError:
        serve.kill()
        serve.wait()


def _changed_files(client: LspClient, seconds: float) -> list[str]:
    """The paths of every workspace/didChangeFileTokens the client receives in `seconds`."""
    client.notifications.clear()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            client.notifications.append(client.read_message(left))
        except TimeoutError:
            break
    return [
        f["path"]
        for n in client.notifications
        if n.get("method") == "workspace/didChangeFileTokens"
        for f in n["params"]["files"]
    ]


def _settle(recorder: InotifyRecorder, quiet: float = 1.0, at_most: float = 10.0) -> None:
    """Wait until the recorder has seen no event for `quiet` seconds (at most `at_most`: a
    daemon that never stops writing is then measured as it is)."""
    deadline = time.monotonic() + at_most
    mark = recorder.mark()
    while time.monotonic() < deadline:
        time.sleep(quiet)
        if recorder.mark() == mark:
            return
        mark = recorder.mark()


def _blobs(home: Path) -> int:
    return sum(
        1 for p in (home / ".local/share/tokend/checkpoints/blobs").rglob("*") if p.is_file()
    )


def test_tokend_does_not_index_or_watch_its_own_folders_in_a_home_workspace(
    home: tuple[Daemons, Path],
) -> None:
    daemons, root = home
    client, _session = _start(daemons, root)
    listed = client.request("workspace/fileTokens", {"workspaceUri": root.as_uri()})["result"]
    indexed = {f["path"] for f in listed}
    assert set(USER_FILES) <= indexed
    assert (root / ".local/share/tokend/checkpoints/index.sqlite3").is_file()
    assert (root / "db/sessions.sqlite3").is_file()
    own = [p for p in indexed if p.startswith((".local/", ".cache/", ".run/", "db/"))]
    assert own == [], f"tokend's own files indexed: {own[:5]}"

    recorder = InotifyRecorder(root)
    try:
        _settle(recorder)  # the first build's last writes (the walk's prune, the tags' cache)
        mark = recorder.mark()
        changed = _changed_files(client, QUIET_SECONDS)
        events = recorder.since(mark)
    finally:
        recorder.close()
    assert changed == [], f"{len(changed)} change notifications while idle: {changed[:5]}"
    assert events == [], (
        f"{len(events)} inotify events while idle: {recorder.by_top_folder(events)}"
    )

    (root / "src" / "app.py").write_text(USER_FILES["src/app.py"] + "\n# edited\n")
    assert "src/app.py" in _changed_files(client, 2.0)  # the watcher still sees the user's files

    blobs = _blobs(root)
    client.close()
    _stop(daemons)
    _start(daemons, root)
    assert _blobs(root) == blobs, "the checkpoint store grew across a restart of an unchanged tree"
