"""`tokend status` with no daemon and no line kept: the line (and `--format claude-code`) from the
session row, read with sqlite3 alone, byte for byte what the store read whole prints and what the
daemon printed for the same session.

A real daemon makes sessions of several shapes on a real SQLite file over its socket, then is
stopped. Oracles: what the daemon's `tokend status` printed, what `tokend --database-url URL
status` prints (it never asks the daemon: the store read whole, the path this work leaves as it
was), and what `python -X importtime` imported (the row's path imports no SQLAlchemy, tiktoken,
pygls, service or catalog module). On main the first cold call reads the store whole.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.real_daemon import Daemons, live_pids, real_daemons
from tests.e2e.status_calls import tokend_imports
from tests.lsp_client import LspClient
from tokend.daemon.paths import socket_path

WAIT_SECONDS = 120.0
HEAVY = ("sqlalchemy", "tiktoken", "pygls", "tokend.service", "tokend.core.models.catalog")
CONFIG = '[summarizer]\nchain = ["extractive"]\n\n[spend]\nsession_usd = 0.5\n'
# Oracle: Anthropic's published Claude Sonnet 4.5 prices ($3 / $15 per million tokens): 100,000
# in and 10,000 out cost $0.45, 90% of the $0.50 session limit (a spend warning in the snapshot).
USAGE = {"inputTokens": 100_000, "outputTokens": 10_000, "cacheReadTokens": 2_000}
EDIT = {"file_path": "a.py", "old_string": "x = 1\n", "new_string": "x = 1\ny = 2\nz = 3\n"}


def _tokend(cwd: Path, *args: str) -> tuple[str, bool]:
    """(stdout, whether anything heavy was imported) of `tokend ARGS` in `cwd`."""
    out, imported = tokend_imports(cwd, *args)
    return out, any(m.startswith(HEAVY) for m in imported)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _append(client: LspClient, sid: str, role: str, *parts: dict[str, Any], **extra: Any) -> None:
    message = {"role": role, "parts": list(parts), **extra}
    client.result("session/append", {"sessionId": sid, "message": message})


def _shapes(client: LspClient, root: Path) -> dict[str, Path]:
    """Sessions of several shapes, each in a project folder of its own (folder by shape)."""
    folders = {}

    def create(shape: str, model: str, **extra: Any) -> str:
        folder = folders[shape] = root / shape
        folder.mkdir(parents=True)
        params = {"model": model, "workspaceUri": folder.as_uri(), **extra}
        return str(client.result("session/create", params)["sessionId"])

    create("fresh", "claude-opus-4-6", contextWindow=200_000)
    exact = create("exact", "gpt-4o")  # tiktoken's counts: exact
    for i in range(3):
        _append(client, exact, "user", _text(f"request {i}: rename the module {i}"))
        _append(client, exact, "assistant", _text(f"renamed module {i} " + "and checked " * 40))
    usage = create("usage", "claude-sonnet-4-5")  # the provider's figures, a spend warning, time
    _append(client, usage, "user", _text("add two lines to a.py"))
    call = {"type": "toolCall", "callId": "c1", "name": "Edit", "input": EDIT}
    _append(client, usage, "assistant", call, usage=USAGE, durationMs=2_500)
    result = {"type": "toolResult", "callId": "c1", "name": "Edit", "output": "edited"}
    _append(client, usage, "user", result)
    compacted = create("compacted", "gpt-4o")  # a prune and the summarizer's summary
    for i in range(8):
        _append(client, compacted, "user", _text(f"request {i}: keep module {i} stable"))
        output = f"listing {i}\n" + "line of output\n" * 2_500  # ~10k tokens each
        call = {"type": "toolCall", "callId": f"r{i}", "name": "bash", "input": {"cmd": "ls"}}
        _append(client, compacted, "assistant", call)
        _append(client, compacted, "user", {**result, "callId": f"r{i}", "output": output})
        _append(client, compacted, "assistant", _text(f"done {i} " + "explained " * 300))
    for strategy in ("prune", "summarize"):
        params = {"sessionId": compacted, "strategy": strategy}
        done = client.result("session/compact", params)["actions"]
        assert [a["kind"] for a in done] == [strategy], done
    return folders


@pytest.fixture
def stopped(monkeypatch: pytest.MonkeyPatch) -> Any:
    """(the sessions' folders by shape, what the daemon's `tokend status` printed in each: the
    line and claude-code's JSON, the store's URL, the daemons), once the daemon has stopped."""
    with real_daemons(monkeypatch) as daemons:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(CONFIG)
        daemons.serve("--idle-timeout", "0")
        client = LspClient.initialized(socket_path(), "test")
        try:
            folders = _shapes(client, daemons.base / "projects")
        finally:
            client.close()
        warm = {}
        for shape, folder in folders.items():
            line, heavy = _tokend(folder, "status")
            claude, _ = _tokend(folder, "status", "--format", "claude-code")
            assert not heavy, shape
            warm[shape] = (line, claude)
        _stop(daemons)
        yield folders, warm, os.environ["TOKEND_DATABASE_URL"], daemons


def _stop(daemons: Daemons) -> None:
    daemon = daemons.processes[0]
    daemon.terminate()
    assert daemon.wait(WAIT_SECONDS) == 0
    assert not live_pids("tokend serve", str(daemons.base))


def test_the_first_cold_status_prints_the_rows_line(stopped: Any) -> None:
    folders, warm, url, daemons = stopped
    for shape, folder in folders.items():
        line, claude = warm[shape]
        assert _tokend(folder, "status") == (line, False), shape  # the row: nothing heavy
        assert _tokend(folder, "--database-url", url, "status") == (line, True), shape
        cold = _tokend(folder, "status", "--format", "claude-code")
        assert cold == (claude, False), shape
        whole = _tokend(folder, "--database-url", url, "status", "--format", "claude-code")
        assert whole == (claude, True), shape
    assert "$0.45" in warm["usage"][0] and "from usage" in warm["usage"][0]
    assert '"total_lines_added": 2' in warm["usage"][1]
    assert not live_pids("tokend serve", str(daemons.base))  # TOKEND_START_DAEMON=0 (conftest)


def test_a_config_file_changed_since_the_row_reads_the_store_whole(stopped: Any) -> None:
    folders, warm, url, _ = stopped
    folder = folders["exact"]
    user_file = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    before = user_file.stat()
    user_file.write_text(CONFIG + "\n[compaction]\nreserved = 50000\n")
    line, heavy = _tokend(folder, "status")
    whole, _ = _tokend(folder, "--database-url", url, "status")
    assert heavy and line == whole != warm["exact"][0]
    # set back as it was (same inode, size and mtime): the row answers again
    user_file.write_text(CONFIG)
    os.utime(user_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _tokend(folder, "status") == (warm["exact"][0], False)
    # the workspace's own file, made since
    (folder / ".tokend.toml").write_text("[compaction]\nreserved = 40000\n")
    line, heavy = _tokend(folder, "status")
    whole, _ = _tokend(folder, "--database-url", url, "status")
    assert heavy and line == whole != warm["exact"][0]


def test_json_reads_the_store_whole(stopped: Any) -> None:
    folders, _, url, _ = stopped
    folder = folders["exact"]
    cold, heavy = _tokend(folder, "status", "--json")
    assert heavy and cold == _tokend(folder, "--database-url", url, "status", "--json")[0]
