"""The session store's file deleted under a running daemon (the real `tokend serve`, SQLite):
nothing is acknowledged that a restart cannot read back, and the user is told why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.core.errors import StoreError
from tokend.daemon import paths


def _append(client: LspClient, session_id: str, text: str) -> dict:
    message = {"role": "user", "parts": [{"type": "text", "text": text}]}
    return client.request("session/append", {"sessionId": session_id, "message": message})


def _store_files(base: Path) -> list[Path]:
    return sorted(base.glob("tokend.sqlite3*"))


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_appends_after_the_store_is_deleted_are_refused(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    with real_daemons(monkeypatch) as daemons:
        daemons.serve("--idle-timeout", "0")
        client = LspClient.unix(paths.socket_path())
        assert "result" in client.initialize("editor")
        session_id = client.request("session/create", {"model": "gpt-4o"})["result"]["sessionId"]
        for i in range(20):
            assert "result" in _append(client, session_id, f"before {i}")
        assert _store_files(daemons.base)
        for path in _store_files(daemons.base):
            path.unlink()  # rm tokend.sqlite3*
        if how == "replaced":  # another file now at the store's path (a restored backup, ...)
            (daemons.base / "tokend.sqlite3").write_bytes(b"")

        refused = [_append(client, session_id, f"after {i}") for i in range(20)]
        refused.append(client.request("session/create", {"model": "gpt-4o"}))
        for reply in refused:
            assert "result" not in reply, "acknowledged a write no restart can read back"
            error = reply["error"]
            assert error["code"] == StoreError.code
            assert how in error["message"] and "restart" in error["message"], error["message"]
        told = [line for line in daemons.log_text().splitlines() if " ERROR " in line]
        assert len(told) == 1 and f"was {how}" in told[0], told  # once, besides each refusal
        client.close()
