"""The daemon parses a big tree's tags in worker processes (issue 22); killed with -9 in the
middle of that, it leaves no worker behind: each reads end-of-file on its stdin (the daemon's
pipe) or sees its parent gone, and exits."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

WORKER = b"tokend.adapters.tag_workers"


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _workers_of(pid: int) -> list[int]:
    out = []
    for child in _children(pid):
        try:
            if WORKER in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(child)
        except OSError:
            continue
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for whoever adopted it to reap it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_killing_the_daemon_mid_build_leaves_no_tag_worker(
    daemons: Daemons, tmp_path: Path
) -> None:
    nonce = os.urandom(8).hex()  # tags are cached by content in the tests' shared cache
    words = b"the quick brown fox jumps over the lazy dog 0123456789 "
    for i in range(600):
        folder = tmp_path / f"pkg{i // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i}.py").write_text(f"def f_{nonce}_{i}():\n    return {i}\n")
    for i in range(12):  # seconds of tree-sitter each: the workers are still busy at the kill
        prose = (f"{nonce} {i} ".encode() + words * 17_000)[:900_000]
        (tmp_path / f"prose{i}.py").write_bytes(prose)
    daemons.serve()
    daemon_pid = daemons.processes[-1].pid
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": tmp_path.as_uri()}
    session = editor.request("session/create", params)["result"]["sessionId"]
    editor.send({"jsonrpc": "2.0", "id": 99, "method": "repoMap/get",
                 "params": {"sessionId": session}})  # fmt: skip
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while not workers and time.monotonic() < deadline:
        workers = _workers_of(daemon_pid)
        time.sleep(0.05)
    assert len(workers) >= 1, "the daemon started no tag worker for 612 files"
    time.sleep(0.5)
    assert all(_alive(w) for w in workers)  # busy parsing
    os.kill(daemon_pid, signal.SIGKILL)
    daemons.processes[-1].wait(10)
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for pid in left:  # never leave one behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, f"tag workers {left} outlived the daemon"
    editor.close()
