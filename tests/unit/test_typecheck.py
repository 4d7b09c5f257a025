"""mypy (strict, settings in pyproject.toml's [tool.mypy]) finds no error in server/tokend."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_strict_is_clean():
    mypy = Path(sys.executable).with_name("mypy")
    result = subprocess.run(
        # No cache: a cold, complete run each time, and nothing written into the checkout.
        [str(mypy), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", os.devnull],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("Success: no issues found"), result.stdout
