"""Stopping ends the background work, and a workspace nobody uses is given back: the real
`tokend serve`, real trees on disk, real inotify watches.

Found (issue 26): a stop during a first repo map left the waiting `repoMap/get` without a reply
and the process alive until the tags were read; `tokend stop` said "stopped" while the process
still ran; every opened workspace kept its inotify watches and threads for the daemon's life.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import ConnectionClosed, LspClient

MODEL = "gpt-4o"
FILES = 2500  # a tree whose first tags take seconds, not milliseconds
STOPPING = -32800  # RequestCancelled: the server cancelled it (protocol.md)


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Daemons]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # a fresh workspace cache
    with real_daemons(monkeypatch) as running:
        yield running


def _tree(root: Path, files: int = FILES) -> Path:
    """`files` Python files, each with its own definitions (tags are cached by content)."""
    for i in range(files):
        folder = root / f"pkg{i % 25}" / f"sub{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"def f_{i}_{j}(x):\n    return g_{(i + j) % 300}(x) + {j}\n\n" for j in range(40)
        )
        (folder / f"m{i}.py").write_text(body)
    return root


def _serve(daemons: Daemons) -> int:
    daemons.serve("--idle-timeout", "0")
    return _pid(daemons)


def _pid(daemons: Daemons) -> int:
    return daemons.processes[-1].pid


def _client(daemons: Daemons, root: Path | None, name: str = "test") -> LspClient:
    client = LspClient.unix(daemons.base / "run" / "tokend" / "daemon.sock")
    params = {
        "processId": None,
        "rootUri": root.as_uri() if root else None,
        "capabilities": {},
        "clientInfo": {"name": name},
    }
    assert "result" in client.request("initialize", params)
    client.notify("initialized", {})
    return client


def _session(client: LspClient, root: Path) -> str:
    reply = client.request("session/create", {"model": MODEL, "workspaceUri": root.as_uri()})
    return str(reply["result"]["sessionId"])


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _wait_gone(daemons: Daemons, pid: int, seconds: float) -> bool:
    proc = next(p for p in daemons.processes if p.pid == pid)
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _watches(pid: int) -> int:
    count = 0
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            count += fd.read_text().count("inotify wd:")
        except OSError:
            pass
    return count


def _steady_watches(pid: int, steady_s: float = 1.0, limit_s: float = 15.0) -> int:
    """The daemon's inotify watches once they held still for `steady_s` (at most `limit_s`)."""
    deadline = time.monotonic() + limit_s
    count, since = _watches(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = _watches(pid)
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= steady_s:
            break
    return count


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _eventually(check: object, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def _reply(client: LspClient, request_id: int, seconds: float) -> dict | None:
    """The reply to `request_id`, or None if the connection closed without it."""
    deadline = time.monotonic() + seconds
    try:
        while True:
            message = client.read_message(max(0.0, deadline - time.monotonic()))
            if message.get("id") == request_id and "method" not in message:
                return message
    except (ConnectionClosed, OSError):
        return None


def _map_request(client: LspClient, session_id: str) -> int:
    client.send(
        {"jsonrpc": "2.0", "id": 99, "method": "repoMap/get", "params": {"sessionId": session_id}}
    )
    return 99


def test_sigterm_during_a_first_map_answers_the_waiting_request_and_exits(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "tree")
    pid = _serve(daemons)
    client = _client(daemons, root)
    request = _map_request(client, _session(client, root))
    time.sleep(0.5)  # the walk is done; the tags are being read
    os.kill(pid, signal.SIGTERM)
    reply = _reply(client, request, 20.0)
    assert reply is not None, "the waiting repoMap/get got no reply"
    assert reply.get("error", {}).get("code") == STOPPING, reply
    assert "stopping" in reply["error"]["message"]
    assert _wait_gone(daemons, pid, 10.0), "the daemon still runs 10 s after SIGTERM"
    lines = [line for line in daemons.log_text().splitlines() if f" {pid} " in line]
    assert lines and "daemon stopped" in lines[-1], lines[-5:]


def test_tokend_stop_returns_once_the_process_is_gone(daemons: Daemons, tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    pid = _serve(daemons)
    client = _client(daemons, root)
    _map_request(client, _session(client, root))  # keeps a thread waiting for the tags
    time.sleep(0.5)
    stopped = subprocess.run(
        [sys.executable, "-m", "tokend", "stop"], capture_output=True, text=True, timeout=60
    )
    gone = _gone(pid)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert gone, f"`tokend stop` said {stopped.stdout.strip()!r} while pid {pid} still ran"
    lines = [line for line in daemons.log_text().splitlines() if f" {pid} " in line]
    assert lines and "daemon stopped" in lines[-1], lines[-5:]


def test_a_workspace_is_released_once_its_last_connection_leaves(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "tree", 300)
    pid = _serve(daemons)
    # A first workspace opened and left the way the measured one is (as big, two connections):
    # the daemon's shared threads (the service's workers, the event loop's executor, which grows
    # to the concurrency it has seen) are started once, on first use, and kept.
    warm = _tree(tmp_path / "warm", 300)
    warming, also = _client(daemons, warm, "warm-up"), _client(daemons, warm, "w")
    assert "result" in warming.request(
        "repoMap/get", {"sessionId": _session(warming, warm)}, timeout=60
    )
    warming.close()
    also.close()
    assert _eventually(lambda: _watches(pid) == 0), _watches(pid)
    time.sleep(0.5)
    watches_before = _watches(pid)
    first, second = _client(daemons, root, "a"), _client(daemons, root, "b")
    session = _session(first, root)
    assert "result" in first.request("repoMap/get", {"sessionId": session}, timeout=60)
    folders = 1 + sum(1 for p in root.rglob("*") if p.is_dir())
    assert _eventually(lambda: _watches(pid) >= watches_before + folders), _watches(pid)

    first.request("shutdown")
    first.notify("exit")
    first.close()
    time.sleep(1.0)  # the second connection still uses it: it stays watched
    assert _watches(pid) >= watches_before + folders

    second.close()  # gone without shutdown, as an editor that crashed
    assert _eventually(lambda: _watches(pid) == watches_before), (
        f"{_watches(pid)} inotify watches after the last client left ({watches_before} before)"
    )
    # Opened again, it is indexed and watched again; left again, its threads go again. A
    # workspace that kept its threads (its build, walk, watch, tag workers' readers) would add
    # them at every opening, so the count after a release must settle. It is not compared with
    # the count before the first opening: asyncio's default executor, shared, grows a thread
    # when a call finds none idle, up to its bound (a run saw `asyncio_2` start during the
    # second opening: 7 threads against 6 after the first release), and never shrinks.
    counts = [_settled_threads(pid)]
    for n in range(4):
        again = _client(daemons, root, f"again{n}")
        assert "result" in again.request("repoMap/get", {"sessionId": session}, timeout=60)
        assert _eventually(lambda: _watches(pid) >= watches_before + folders)
        again.close()
        assert _eventually(lambda: _watches(pid) == watches_before), _watches(pid)
        counts.append(_settled_threads(pid))
        if counts[-1] <= counts[-2]:
            break
    assert counts[-1] <= counts[-2], f"threads after each release: {counts}"


def _settled_threads(pid: int) -> int:
    """The daemon's thread count once it has not changed for a second (a release's threads
    end in turn)."""
    count, same = _threads(pid), 0
    for _ in range(100):
        time.sleep(0.2)
        now = _threads(pid)
        same = same + 1 if now == count else 0
        count = now
        if same == 5:
            break
    return count


def test_a_folder_removed_from_the_workspace_is_released(daemons: Daemons, tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree", 100)
    pid = _serve(daemons)
    time.sleep(0.5)
    watches_before = _watches(pid)
    client = _client(daemons, root)
    assert _eventually(lambda: _watches(pid) > watches_before)
    client.notify(
        "workspace/didChangeWorkspaceFolders",
        {"event": {"added": [], "removed": [{"uri": root.as_uri(), "name": "tree"}]}},
    )
    assert _eventually(lambda: _watches(pid) == watches_before), _watches(pid)
    assert "result" in client.request("session/list", {})  # the connection serves on


def test_a_workspace_used_only_through_a_session_stays_while_its_connection_does(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "tree", 100)
    pid = _serve(daemons)
    time.sleep(0.5)
    watches_before = _watches(pid)
    agent = _client(daemons, None, "agent")  # names no folder: uses the session's
    session = _session(agent, root)
    assert "result" in agent.request("repoMap/get", {"sessionId": session}, timeout=60)
    assert _eventually(lambda: _watches(pid) > watches_before)
    watched = _watches(pid)
    passer = _client(daemons, tmp_path, "passer-by")  # another folder, opened and left
    passer.close()
    time.sleep(2.0)
    assert _watches(pid) == watched, "released while the agent's connection still used it"
    agent.close()
    assert _eventually(lambda: _watches(pid) == watches_before), _watches(pid)


def test_a_daemon_started_during_a_stop_waits_until_the_old_one_is_gone(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "tree")
    old = _serve(daemons)
    client = _client(daemons, root)
    _map_request(client, _session(client, root))  # a first map being built
    time.sleep(0.5)
    os.kill(old, signal.SIGTERM)
    time.sleep(0.2)  # its socket is gone: an editor now starts a new daemon
    daemons.serve("--idle-timeout", "0")  # returns once the new one says it is ready
    assert _gone(old), "a second daemon was serving while the first still ran"


def test_a_workspace_opened_by_an_append_stays_while_the_agent_is_connected(
    daemons: Daemons, tmp_path: Path
) -> None:
    root = _tree(tmp_path / "tree", 100)
    pid = _serve(daemons)
    time.sleep(0.5)
    watches_before = _watches(pid)
    agent = _client(daemons, None, "agent")
    session = _session(agent, root)
    message = {"role": "user", "parts": [{"type": "text", "text": "look at pkg0"}]}
    assert "result" in agent.request("session/append", {"sessionId": session, "message": message})
    assert _eventually(lambda: _watches(pid) > watches_before)  # the checkpointer opened it
    watched = _steady_watches(pid)  # its watcher may still be adding folders
    passer = _client(daemons, tmp_path, "passer-by")
    passer.close()
    time.sleep(2.0)
    # the passer-by's own workspace may not be released yet: fewer watches than the agent's
    # workspace holds would mean that one was released
    assert _steady_watches(pid) >= watched, "released while the agent's connection still used it"
    agent.close()
    assert _eventually(lambda: _watches(pid) == watches_before), _watches(pid)
