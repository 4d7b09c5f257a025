"""The VS Code extension's protocol and gauge modules (no `vscode` import), run by node against
a real daemon: `npm ci` installs the pinned packages, `npm test` compiles TypeScript (strict) and
runs `node --test` (clients/vscode/src/test), among them the tooltip check `make test-editors`
runs in real VS Code. And `npm run package`: a bundled .vsix, without a warning."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.daemon.real_daemon import real_daemons

EXTENSION = Path(__file__).resolve().parents[2] / "clients" / "vscode"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed to test the VS Code extension (Node 20 or later)")
    return npm


@pytest.fixture(scope="module")
def npm() -> str:
    npm = _npm()
    installed = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr
    return npm


def test_the_extension_modules_pass_their_node_tests_against_a_real_daemon(npm, monkeypatch):
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


def test_npm_run_package_makes_a_bundled_vsix_without_a_warning(npm):
    packaged = subprocess.run(
        [npm, "run", "package"], cwd=EXTENSION, capture_output=True, text=True, timeout=300
    )
    report = packaged.stdout + packaged.stderr
    assert packaged.returncode == 0, report
    assert "WARNING" not in report and "ERROR" not in report, report
    manifest = json.loads((EXTENSION / "package.json").read_text())
    main = manifest["main"].removeprefix("./")
    with zipfile.ZipFile(EXTENSION / "tokend.vsix") as vsix:
        names = sorted(n for n in vsix.namelist() if n.startswith("extension/"))
        assert "Permission is hereby granted" in vsix.read("extension/LICENSE.txt").decode()
        assert "## Settings" in vsix.read("extension/readme.md").decode()
    assert names == sorted(
        f"extension/{n}" for n in ("LICENSE.txt", "package.json", "readme.md", main)
    )
    # the bundle needs nothing but node's own modules and the vscode API: no node_modules
    builtins = subprocess.run(
        ["node", "-p", "JSON.stringify(require('module').builtinModules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    allowed = {"vscode", *json.loads(builtins.stdout)}
    required = set(re.findall(r"""require\(["']([^"']+)["']\)""", (EXTENSION / main).read_text()))
    assert "vscode" in required and required <= allowed, required - allowed
