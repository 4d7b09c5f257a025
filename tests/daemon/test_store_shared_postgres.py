"""Several real daemons on one real PostgreSQL (started by the suite): one session, many editors.

Each daemon is a `tokend serve` process with its own socket; clients talk to them over real
unix sockets. The oracle is the database itself, read back by a fresh store: every
acknowledged append is there once, and the versions the replies gave are unique and contiguous.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.adapters.store import SqlStore
from tokend.daemon import paths

APPENDS_PER_CLIENT = 40
VERSION_CONFLICT = -33006
SESSION_NOT_FOUND = -33001


def _serve(daemons: Any, monkeypatch: pytest.MonkeyPatch, url: str, *names: str) -> None:
    monkeypatch.setenv("TOKEND_DATABASE_URL", url)
    for name in names:
        daemons.serve("--name", name, "--idle-timeout", "0")


def _client(name: str, label: str) -> LspClient:
    client = LspClient.unix(paths.socket_path(name))
    assert "result" in client.initialize(label)
    return client


def _append(client: LspClient, session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": text}]}
    message.update(extra.pop("message", {}))
    return client.request(
        "session/append", {"sessionId": session_id, "message": message, **extra}, timeout=60
    )


def _wait_for_version(client: LspClient, session_id: str, version: int, timeout: float) -> bool:
    """True once a budget/didChange of `session_id` at `version` or later reached `client`."""
    deadline = time.monotonic() + timeout
    while True:
        for note in client.notifications:
            params = note.get("params") or {}
            if (
                note.get("method") == "budget/didChange"
                and params.get("sessionId") == session_id
                and params.get("snapshot", {}).get("version", -1) >= version
            ):
                return True
        if time.monotonic() > deadline:
            return False
        try:
            client.notifications.append(client.read_message(0.2))
        except TimeoutError:
            pass


def test_two_daemons_on_one_postgresql_share_a_session(
    monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    with real_daemons(monkeypatch) as daemons:
        _serve(daemons, monkeypatch, pg_url, "a", "b")
        creator = _client("a", "creator")
        created = creator.request("session/create", {"model": "gpt-4o", "title": "shared"})
        session_id = created["result"]["sessionId"]
        watcher = _client("b", "watcher on b")
        assert (
            watcher.request("session/attach", {"sessionId": session_id})["result"]["version"] == 0
        )

        # Two clients on each daemon append at once.
        replies: dict[str, list[dict[str, Any]]] = {}

        def run(daemon: str, label: str) -> None:
            client = _client(daemon, label)
            client.request("session/attach", {"sessionId": session_id})
            replies[label] = [
                _append(client, session_id, f"{label} message {i}")
                for i in range(APPENDS_PER_CLIENT)
            ]
            client.close()

        threads = [
            threading.Thread(target=run, args=(daemon, f"{daemon}{n}"))
            for daemon in ("a", "b")
            for n in (1, 2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        assert len(replies) == 4
        errors = [r["error"] for rs in replies.values() for r in rs if "error" in r]
        assert errors == []
        versions = sorted(r["result"]["version"] for rs in replies.values() for r in rs)
        total = 4 * APPENDS_PER_CLIENT
        assert versions == list(range(1, total + 1))  # unique and contiguous across daemons

        # The database holds each acknowledged message once, none lost, none duplicated.
        with SqlStore.open(pg_url) as store:
            texts = [m.parts[0].part.text for m in store.messages.load_messages(session_id)]  # type: ignore[union-attr]
            assert store.get_session(session_id).version == total  # type: ignore[union-attr]
        expected = {f"{label} message {i}" for label in replies for i in range(APPENDS_PER_CLIENT)}
        assert len(texts) == total and set(texts) == expected

        # An editor attached to daemon b hears daemon a's appends, and b's view is a's.
        heard = _wait_for_version(watcher, session_id, total, timeout=10)
        assert heard, (
            [n.get("params", {}).get("snapshot", {}).get("version") for n in watcher.notifications][
                -5:
            ],
            daemons.log_text()[-3000:],
        )
        on_a = creator.request("budget/snapshot", {"sessionId": session_id})["result"]
        on_b = watcher.request("budget/snapshot", {"sessionId": session_id})["result"]
        # A third daemon loads the session whole: the two that caught up agree with it.
        _serve(daemons, monkeypatch, pg_url, "c")
        fresh = _client("c", "fresh").request("budget/snapshot", {"sessionId": session_id})
        on_c = fresh["result"]
        assert on_a["version"] == on_b["version"] == on_c["version"] == total
        for key in ("usedTokens", "breakdown", "totals"):
            assert on_a[key] == on_b[key] == on_c[key], key

        # A stale ifVersion is refused whichever daemon made the newer version.
        moved = _append(creator, session_id, "on a", ifVersion=total)
        assert moved["result"]["version"] == total + 1
        stale = _append(watcher, session_id, "on b, stale", ifVersion=total)
        assert stale["error"]["code"] == VERSION_CONFLICT
        assert stale["error"]["data"]["currentVersion"] == total + 1


def test_a_retried_append_with_its_id_is_stored_once_whichever_daemon_gets_it(
    monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    with real_daemons(monkeypatch) as daemons:
        _serve(daemons, monkeypatch, pg_url, "a", "b")
        on_a, on_b = _client("a", "a"), _client("b", "b")
        session_id = on_a.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
        first = _append(on_a, session_id, "run the tests", message={"id": "client-msg-1"})
        again = _append(on_b, session_id, "run the tests", message={"id": "client-msg-1"})
        assert "result" in first and again["result"] == first["result"]
        assert first["result"]["messageId"] == "client-msg-1"
        with SqlStore.open(pg_url) as store:
            assert [m.id for m in store.messages.load_messages(session_id)] == ["client-msg-1"]
            assert store.get_session(session_id).version == 1  # type: ignore[union-attr]


def test_four_daemons_started_at_once_on_an_empty_database_all_come_up(
    monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    import subprocess
    import sys

    with real_daemons(monkeypatch) as daemons:
        monkeypatch.setenv("TOKEND_DATABASE_URL", pg_url)
        logs = [daemons.base / f"at-once-{i}.err" for i in range(4)]
        procs = []
        for i, log in enumerate(logs):  # no waiting in between: the migrations race
            with open(log, "wb") as stderr:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "tokend", "serve", "--name", f"n{i}"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                )
            daemons.processes.append(proc)
            procs.append(proc)
        deadline = time.monotonic() + 60
        while not all("tokend: ready" in log.read_text() for log in logs):
            exited = [
                log.read_text()
                for proc, log in zip(procs, logs, strict=True)
                if proc.poll() is not None
            ]
            assert not exited and time.monotonic() < deadline, exited
            time.sleep(0.05)
        for i in range(4):
            client = _client(f"n{i}", f"client {i}")
            created = client.request("session/create", {"model": "gpt-4o"})
            assert "result" in created, created


def test_a_delete_on_one_daemon_is_heard_and_honoured_on_the_other(
    monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    with real_daemons(monkeypatch) as daemons:
        _serve(daemons, monkeypatch, pg_url, "a", "b")
        on_a, editor_a = _client("a", "deleter"), _client("a", "editor on a")
        session_id = on_a.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
        assert _append(on_a, session_id, "hello")["result"]["version"] == 1
        editor_a.request("session/attach", {"sessionId": session_id})
        on_b = _client("b", "editor on b")  # daemon b has the session loaded, in memory
        assert on_b.request("session/attach", {"sessionId": session_id})["result"]["version"] == 1

        assert "result" in on_a.request("session/delete", {"sessionId": session_id})
        # The editor on a hears the delete as any change: a budget/didChange at its version.
        assert _wait_for_version(editor_a, session_id, 2, timeout=10)
        # Daemon b hears the commit and answers as the store does, not from its memory.
        deadline = time.monotonic() + 10
        while True:
            on_b_now = on_b.request("budget/snapshot", {"sessionId": session_id})
            if "error" in on_b_now or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert on_b_now["error"]["code"] == SESSION_NOT_FOUND, on_b_now
        on_a_now = on_a.request("budget/snapshot", {"sessionId": session_id})
        assert on_a_now["error"]["code"] == SESSION_NOT_FOUND

        restored = on_a.request("session/restore", {"sessionId": session_id})
        assert restored["result"]["deletedAt"] is None
        back = [c.request("budget/snapshot", {"sessionId": session_id}) for c in (on_a, on_b)]
        assert [r["result"]["version"] for r in back] == [3, 3]
        with SqlStore.open(pg_url) as store:
            assert store.get_session(session_id).version == 3  # type: ignore[union-attr]
