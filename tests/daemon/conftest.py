"""Fixtures for the daemon tests: a private runtime dir, real daemon and forwarder processes."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.abuse import live_pids
from tokend.daemon import paths
from tokend.daemon.spawn import ENV_DAEMON_CMD

FIXTURE_DAEMON = Path(__file__).with_name("fixture_daemon.py")


class Runtime:
    """One test's runtime dir, and every process the test started (killed at teardown)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.processes: list[subprocess.Popen[bytes]] = []
        self._logs = 0

    def socket_path(self, name: str | None = None) -> Path:
        return paths.socket_path(name)

    def start_daemon(
        self,
        *listen: str,
        idle_timeout: float = 30.0,
        wait_ready: bool = True,
        extra_args: tuple[str, ...] = (),
    ) -> tuple[subprocess.Popen[bytes], list[str], Path]:
        """Run the fixture daemon in the foreground; returns (process, addresses, stderr file)."""
        listen = listen or (f"unix:{self.socket_path()}",)
        stderr_path = self._log_file("daemon")
        args = [sys.executable, str(FIXTURE_DAEMON), "--idle-timeout", str(idle_timeout)]
        args += extra_args
        for spec in listen:
            args += ["--listen", spec]
        with open(stderr_path, "wb") as stderr:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
            )
        self.processes.append(proc)
        if not wait_ready:
            return proc, [], stderr_path
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if match := re.search(r"listening on (.*) ready", stderr_path.read_text()):
                return proc, match.group(1).split(), stderr_path
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"daemon did not start: {stderr_path.read_text()}")

    def start_forwarder(self, remote: str = "auto") -> subprocess.Popen[bytes]:
        """`tokend lsp --remote=REMOTE` as the editor runs it (stdio pipes)."""
        with open(self._log_file("forwarder"), "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tokend.daemon.forwarder", f"--remote={remote}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        self.processes.append(proc)
        return proc

    def daemon_pids(self) -> set[int]:
        """Live fixture-daemon processes of this test (found by their command line)."""
        return live_pids(FIXTURE_DAEMON.name, str(self.base))

    def _log_file(self, kind: str) -> Path:
        self._logs += 1
        return self.base / f"{kind}-{self._logs}.err"

    def cleanup(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for pid in self.daemon_pids():  # daemons our forwarders spawned
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    # A short base path: unix socket paths are limited to ~104 bytes.
    base = Path(tempfile.mkdtemp(prefix="tkd-"))
    (base / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / "run"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv(ENV_DAEMON_CMD, f"{sys.executable} {FIXTURE_DAEMON} --idle-timeout 30")
    runtime = Runtime(base)
    yield runtime
    runtime.cleanup()
    shutil.rmtree(base, ignore_errors=True)
