"""`tokend ...` run as a shell prompt runs it, for the tests of `tokend status` with no daemon:
its output, and (with `-X importtime`) which modules it imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WAIT_SECONDS = 120.0


def tokend(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """stdout of `tokend ARGS` in `cwd` (it must succeed)."""
    return tokend_imports(cwd, *args, env=env, importtime=False)[0]


def tokend_imports(
    cwd: Path, *args: str, env: dict[str, str] | None = None, importtime: bool = True
) -> tuple[str, set[str]]:
    """(stdout, the modules imported) of `tokend ARGS` in `cwd` (it must succeed)."""
    done = subprocess.run(
        [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "tokend", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    said = [r for r in done.stderr.splitlines() if not r.startswith("import time:")]
    assert done.returncode == 0, (args, said)
    imported = {r.rsplit("|", 1)[-1].strip() for r in done.stderr.splitlines() if "|" in r}
    return done.stdout, imported
