"""A real PostgreSQL server for the tests, started by the suite itself.

The server binaries come from the `pgserver` wheel (a test dependency that ships them), else
from $TOKEND_TEST_PG_BINDIR, else from an installed PostgreSQL (`pg_config --bindir`, Debian's
/usr/lib/postgresql/N/bin). PostgreSQL refuses to run as root: as root, initdb and postgres run
as the unprivileged `nobody` through util-linux's setpriv, in a scratch folder it owns. When
`nobody` cannot reach the binaries (a checkout, and so its .venv, inside root's 0700 home or a
`mktemp -d` folder), the server's bin, lib and share folders are copied into that scratch folder
first, so the suite starts PostgreSQL wherever the checkout lies.

When no server can be had, `PostgresServer.start` raises with the reason: the suite fails and
says why, it never skips.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

SUPERUSER = "tokend"
READY_TIMEOUT_S = 30.0


class PostgresUnavailable(RuntimeError):
    pass


def _bindir() -> Path:
    candidates: list[Path] = []
    explicit = os.environ.get("TOKEND_TEST_PG_BINDIR")
    if explicit:
        candidates.append(Path(explicit))
    try:
        import pgserver  # type: ignore[import-untyped]

        candidates.append(Path(pgserver.__file__).parent / "pginstall" / "bin")
    except ImportError:
        pass
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    raise PostgresUnavailable(
        "no PostgreSQL server binaries: install the test dependencies (`scripts/bootstrap` "
        "installs the pgserver wheel, which ships them), or set TOKEND_TEST_PG_BINDIR to a "
        "folder holding initdb and postgres"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One throw-away PostgreSQL cluster on 127.0.0.1 (trust authentication, no fsync)."""

    def __init__(self) -> None:
        self.port = 0
        self._root: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._databases = 0

    def _as_server_user(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise PostgresUnavailable(
                "running as root, PostgreSQL must run as another user, and util-linux's "
                "setpriv is missing to switch to 'nobody'"
            )
        return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

    def start(self) -> PostgresServer:
        bindir = _bindir()
        prefix = self._as_server_user()
        self._root = Path(tempfile.mkdtemp(prefix="tokend-pg-"))
        if prefix:
            nobody = pwd.getpwnam("nobody")
            os.chown(self._root, nobody.pw_uid, nobody.pw_gid)
            bindir = self._reachable(bindir, prefix)
        data = self._root / "data"
        init = subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", SUPERUSER]
            + ["-E", "UTF8", "--no-sync", "--no-instructions"],
            capture_output=True,
            text=True,
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()[-2000:]}")
        self.port = _free_port()
        log = open(self._root / "server.log", "wb")  # noqa: SIM115 - kept for the server's life
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self._root),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "shared_buffers": "32MB",
        }
        args = [*prefix, str(bindir / "postgres"), "-D", str(data)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        self._process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                with psycopg.connect(self.conninfo("postgres"), connect_timeout=2):
                    return self
            except psycopg.OperationalError as exc:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    text = (self._root / "server.log").read_text(errors="replace")[-2000:]
                    self.stop()
                    raise PostgresUnavailable(f"PostgreSQL did not start: {exc}\n{text}") from exc
                time.sleep(0.1)

    def _reachable(self, bindir: Path, prefix: list[str]) -> Path:
        """`bindir`, or a copy of its installation in the scratch folder when the server's
        user cannot run it from where it lies (a folder on the way it may not enter).

        The copy keeps the layout around the binaries: their RPATH names the libraries
        relatively (the pgserver wheel's `$ORIGIN/../../../pgserver.libs`)."""
        probe = subprocess.run([*prefix, str(bindir / "initdb"), "--version"], capture_output=True)
        if probe.returncode == 0:
            return bindir
        assert self._root is not None
        install, package = bindir.parent, bindir.parent.parent
        copy = self._root / package.name / install.name
        for part in ("bin", "lib", "share"):
            if (install / part).is_dir():
                shutil.copytree(install / part, copy / part, symlinks=True)
        libs = package.parent / f"{package.name}.libs"  # auditwheel's bundled libraries
        if libs.is_dir():
            shutil.copytree(libs, self._root / libs.name, symlinks=True)
        return copy / "bin"

    def conninfo(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database}"

    def url(self, database: str) -> str:
        """A SQLAlchemy URL (the psycopg 3 driver) for `database`."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def new_database(self, name: str | None = None) -> str:
        """A fresh, empty database; its SQLAlchemy URL."""
        self._databases += 1
        name = name or f"t{os.getpid()}_{self._databases}"
        with psycopg.connect(self.conninfo("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)  # "fast" shutdown; SIGTERM waits for clients
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            if process.poll() is None:
                process.kill()
                process.wait()
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
