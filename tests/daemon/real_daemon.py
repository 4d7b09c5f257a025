"""The real tokend daemon for tests: `tokend serve` in the foreground, or started detached by a
`tokend lsp` forwarder as an editor would, in a private runtime/state dir; killed at teardown."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.daemon.abuse import live_pids
from tests.in_process import Standalone
from tests.lsp_client import LspClient
from tokend.daemon.spawn import ENV_DAEMON_CMD


class Daemons:
    """Daemons (and forwarders) started by one test, all killed at teardown."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.processes: list[subprocess.Popen[bytes]] = []
        self.in_process: list[Standalone] = []

    @property
    def log_dir(self) -> Path:
        return self.base / "state" / "tokend"

    def log_text(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.log_dir.glob("*.log*")))

    def serve(self, *args: str) -> Path:
        """`tokend serve ARGS` in the foreground, stderr to a file; returns that file."""
        stderr_file = self.base / f"serve-{len(self.processes)}.err"
        with open(stderr_file, "wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tokend", "serve", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        self.processes.append(proc)
        deadline = time.monotonic() + 20
        while "tokend: ready" not in stderr_file.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, stderr_file.read_text()
            time.sleep(0.05)
        return stderr_file

    def standalone(self) -> Standalone:
        """The server without the process, for one connection's test of what the service does:
        `tokend lsp --standalone`'s in this process (tests/in_process.py), on this runtime's
        SQLite file. What needs the daemon (several connections, its socket, its frame reader,
        its log, signals) stays with `serve()`."""
        client = Standalone.start(self.base)
        self.in_process.append(client)
        return client

    def editor(self) -> LspClient:
        """`tokend lsp` as an editor runs it: it starts the daemon, detached, if none runs."""
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokend", "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(proc)
        return LspClient.process(proc)

    def cleanup(self) -> None:
        for client in self.in_process:
            client.stop()
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for pid in live_pids("tokend serve", str(self.base)):
            # A daemon the test stopped may finish exiting between the listing and the kill.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextmanager
def real_daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    base = Path(tempfile.mkdtemp(prefix="tkl-"))  # short: unix socket paths are ~104 bytes at most
    (base / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / "run"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("TOKEND_DATABASE_URL", f"sqlite:///{base}/tokend.sqlite3")
    monkeypatch.delenv(ENV_DAEMON_CMD, raising=False)
    runtime = Daemons(base)
    try:
        yield runtime
    finally:
        runtime.cleanup()
        shutil.rmtree(base, ignore_errors=True)
