"""Shared fixtures: every test runs with its own data, config, state and runtime folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests import tiers
from tests.tiers import (  # noqa: F401 (hooks: the time per tier at the end of a run)
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_terminal_summary,
)

tiers.install()

# Shared machines are noisy: a slow example is not a failure. Property tests judge outcomes only.
settings.register_profile(
    "tokend", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False
)
settings.load_profile("tokend")

ROOT = Path(__file__).resolve().parents[1]


def fresh_interpreter(program: str) -> Any:
    """The JSON value `program` prints last, run by a fresh interpreter in the server's folder
    (what a first request meets: nothing imported, no hook written)."""
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        cwd=ROOT / "server",
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


SERIAL = (
    "tests/checkpoints/test_checkpoints_blob_kill9.py",
    "tests/daemon/test_protocol_big_replies_off_loop.py",
    "tests/daemon/test_daemon_idle_exit.py",
    "tests/daemon/test_workspace_incremental_edits.py",
    "tests/daemon/test_daemon_kill9_consistency.py",
    "tests/daemon/test_daemon_stop_and_release.py",
    "tests/daemon/test_workspace_no_waiting_behind_a_big_buffer.py",
    "tests/daemon/test_workspace_no_waiting_behind_file_tokens.py",
    "tests/daemon/test_workspace_no_waiting_behind_tagging.py",
    "tests/e2e/test_transcripts_follow.py",
    "tests/e2e/test_transcripts_follow_growth.py",
    "tests/e2e/test_transcripts_follow_without_inotify.py",
    "tests/lsp/test_protocol_big_reply_beside_loop.py",
    "tests/workspace/test_workspace_file_index.py",
    "tests/workspace/test_workspace_tag_workers.py",
)
"""Modules that bound a wait, a batch or an idle period in wall time, or kill a daemon and wait for
the next: `make test` runs them alone after the rest, which runs on two workers (pytest-xdist), so
no other test's processes share the cores while they measure."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).relative_to(ROOT).as_posix() in SERIAL:
            item.add_marker(pytest.mark.serial)


SESSIONS_DIR = ROOT.parent / "shared" / "data" / "claude-code-sessions"
BIG_SESSION = SESSIONS_DIR / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


@pytest.fixture(autouse=True)
def isolated_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point XDG folders (and so platformdirs) at a fresh temp tree; no test touches the user's."""
    base = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        path = base / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))
    runtime = base / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("TOKEND_DATABASE_URL", raising=False)
    # A cold `tokend status` starts a daemon in the background: only the tests of that start do.
    monkeypatch.setenv("TOKEND_START_DAEMON", "0")
    return base


@pytest.fixture(autouse=True)
def in_process_servers_stopped(isolated_dirs: Path) -> Iterator[None]:
    """An in-process `--standalone` a failed test left running is stopped, and the environment
    it was given put back, before the folders above are (tests/in_process.py)."""
    yield
    if (module := sys.modules.get("tests.in_process")) is not None:
        module.stop_all()


def sessions_dir_or_skip() -> Path:
    """The real Claude Code sessions; a missing data folder FAILS the test (never a skip: the
    figures they check would silently go unmeasured)."""
    if not SESSIONS_DIR.is_dir():
        pytest.fail(
            f"the shared Claude Code sessions are not beside the repo: expected {SESSIONS_DIR} "
            "(clone the shared folder next to this checkout)"
        )
    return SESSIONS_DIR


def session_file(name: str) -> Path:
    path = sessions_dir_or_skip() / name
    if not path.is_file():
        pytest.fail(f"the shared session {name} is missing from {SESSIONS_DIR}")
    return path


def tokend_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def postgres_server():  # type: ignore[no-untyped-def]
    """A real PostgreSQL started for this test run (tests/pg.py); a test that needs one FAILS
    when none can be started, with the reason."""
    from tests.pg import PostgresServer, PostgresUnavailable

    server = PostgresServer()
    try:
        server.start()
    except PostgresUnavailable as exc:
        pytest.fail(f"no PostgreSQL for the tests: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres_server) -> str:  # type: ignore[no-untyped-def]
    """The SQLAlchemy URL of a fresh, empty PostgreSQL database."""
    return str(postgres_server.new_database())
