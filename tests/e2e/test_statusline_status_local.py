"""`tokend status` with no daemon answers the snapshot the server answers: the same spend
warnings and rate headroom (found: the command built a service without the usage monitor, so
its snapshot had neither). `tokend lsp --standalone`'s server and `tokend status` (tokend.cli.main)
in the test's process (tests/in_process.py), one SQLite file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import tokend_env
from tests.in_process import InProcessClient, tokend_cli

CONFIG = """
[spend]
session_usd = 0.5

[rate]
tpm_limit = 1000000
"""
# Oracle: Anthropic's published Claude Sonnet 4.5 prices ($3 / $15 per million tokens):
# 100,000 in and 10,000 out cost $0.45, 90% of the $0.50 session limit.
USAGE = {"inputTokens": 100_000, "outputTokens": 10_000}


async def test_status_without_a_daemon_has_the_servers_spend_warnings_and_rate(tmp_path: Path):
    config_dir = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend"
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").write_text(CONFIG)
    url = f"sqlite:///{tmp_path / 'tokend.sqlite3'}"
    server = await InProcessClient.start(tmp_path, env=tokend_env(TOKEND_DATABASE_URL=url))
    await server.initialize()
    sid = (await server.request("session/create", {"model": "claude-sonnet-4-5"}))["sessionId"]
    user = {"role": "user", "parts": [{"type": "text", "text": "run the tests"}]}
    await server.request("session/append", {"sessionId": sid, "message": user})
    reply = {"role": "assistant", "parts": [{"type": "text", "text": "done"}], "usage": USAGE}
    await server.request("session/append", {"sessionId": sid, "message": reply})
    served = await server.request("budget/snapshot", {"sessionId": sid})
    assert await server.shutdown() == 0

    done = tokend_cli(
        "--database-url", url, "status", "--json", "--session", sid, cwd=tmp_path, env=tokend_env()
    )
    assert done.returncode == 0, done.stderr
    local = json.loads(done.stdout)
    assert any("90% of the $0.50 limit" in w for w in served["warnings"]), served["warnings"]
    assert served["rate"]["tokensPerMinute"] == 110_000
    assert local["warnings"] == served["warnings"]
    assert local["rate"] == served["rate"]
    assert local["usedTokens"] == served["usedTokens"]
