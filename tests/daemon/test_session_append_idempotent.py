"""A client-chosen message id makes session/append safe to retry (the real daemon, SQLite)."""

from __future__ import annotations

import pytest

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths


def _append(client: LspClient, session_id: str, message_id: str, text: str) -> dict:
    message = {"role": "user", "parts": [{"type": "text", "text": text}], "id": message_id}
    return client.request("session/append", {"sessionId": session_id, "message": message})


def test_the_same_id_twice_stores_once_and_answers_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        first_client = LspClient.unix(paths.socket_path())
        assert "result" in first_client.initialize("first")
        session_id = first_client.request("session/create", {"model": "gpt-4o"})["result"][
            "sessionId"
        ]
        other = first_client.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
        first = _append(first_client, session_id, "0b9e7c2a-retry-me", "deploy to staging")
        # The reply was "lost": the client reconnects and sends the same append again.
        first_client.close()
        retry_client = LspClient.unix(paths.socket_path())
        assert "result" in retry_client.initialize("retry")
        again = _append(retry_client, session_id, "0b9e7c2a-retry-me", "deploy to staging")
        assert again["result"] == first["result"]
        listed = retry_client.request("session/messages", {"sessionId": session_id})["result"]
        assert [m["messageId"] for m in listed["messages"]] == ["0b9e7c2a-retry-me"]
        elsewhere = _append(retry_client, other, "0b9e7c2a-retry-me", "deploy to staging")
        assert elsewhere["error"]["code"] == -32602
        assert "another session" in elsewhere["error"]["message"]
        bad = _append(retry_client, session_id, "has spaces/and slashes", "x")
        assert bad["error"]["code"] == -32602 and "message.id" in bad["error"]["message"]
        # Nothing of the refused appends was stored.
        listed = retry_client.request("session/messages", {"sessionId": session_id})["result"]
        assert len(listed["messages"]) == 1


def _retry_answers_the_first_version(first_client: LspClient, retry_client: LspClient) -> None:
    session_id = first_client.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
    first = _append(first_client, session_id, "01-first", "run the tests")["result"]
    assert first["version"] == 1
    assert (
        _append(first_client, session_id, "02-second", "and the linter")["result"]["version"] == 2
    )
    assert _append(first_client, session_id, "03-third", "then commit")["result"]["version"] == 3
    # The first reply was lost; the retry comes after two more appends (through any daemon).
    again = _append(retry_client, session_id, "01-first", "run the tests")
    assert again["result"] == first, "a retry answers the first append's reply, version 1"
    listed = retry_client.request("session/messages", {"sessionId": session_id})["result"]
    assert [m["messageId"] for m in listed["messages"]] == ["01-first", "02-second", "03-third"]


def test_a_retry_answers_the_version_of_the_first_append(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        first_client = LspClient.unix(paths.socket_path())
        assert "result" in first_client.initialize("first")
        retry_client = LspClient.unix(paths.socket_path())
        assert "result" in retry_client.initialize("retry")
        _retry_answers_the_first_version(first_client, retry_client)


def test_a_retry_through_another_daemon_on_postgresql_answers_the_first_version(
    monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    with real_daemons(monkeypatch) as daemons:
        monkeypatch.setenv("TOKEND_DATABASE_URL", pg_url)
        daemons.serve("--name", "a", "--idle-timeout", "0")
        daemons.serve("--name", "b", "--idle-timeout", "0")
        first_client = LspClient.unix(paths.socket_path("a"))
        assert "result" in first_client.initialize("first")
        retry_client = LspClient.unix(paths.socket_path("b"))
        assert "result" in retry_client.initialize("retry")
        _retry_answers_the_first_version(first_client, retry_client)
