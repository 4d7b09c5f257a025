"""The VS Code extension's protocol and gauge modules (no `vscode` import), run by node against
a real daemon: `npm ci` installs the pinned packages, `npm test` compiles TypeScript (strict) and
runs `node --test` (clients/vscode/src/test)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.real_daemon import real_daemons

EXTENSION = Path(__file__).resolve().parents[2] / "clients" / "vscode"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed to test the VS Code extension (Node 20 or later)")
    return npm


def test_the_extension_modules_pass_their_node_tests_against_a_real_daemon(monkeypatch):
    npm = _npm()
    installed = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        env = {**os.environ, "TOKEND_TEST_COMMAND": json.dumps([sys.executable, "-m", "tokend"])}
        ran = subprocess.run(
            [npm, "test"], cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=300
        )
    report = ran.stdout + ran.stderr
    assert ran.returncode == 0, report
    passed = re.search(r"^# pass (\d+)$", report, re.MULTILINE)
    assert passed and int(passed.group(1)) >= 5, report
    assert re.search(r"^# fail 0$", report, re.MULTILINE), report
