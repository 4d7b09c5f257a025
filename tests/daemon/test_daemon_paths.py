"""Runtime dir, socket names, token file, --listen / --remote parsing, the daemon command."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from tokend.adapters.rendezvous import connect_unix
from tokend.daemon import paths
from tokend.daemon.endpoints import ListenAddress, parse_listen
from tokend.daemon.forwarder import parse_remote
from tokend.daemon.spawn import ENV_DAEMON_CMD, daemon_command


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return tmp_path


def test_runtime_dir_is_created_private_under_xdg_runtime_dir(xdg: Path) -> None:
    assert paths.runtime_dir() == xdg / "tokend"
    assert stat.S_IMODE(os.stat(xdg / "tokend").st_mode) == 0o700


def test_without_xdg_runtime_dir_a_per_user_temp_dir_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert paths.runtime_dir() == tmp_path / f"tokend-{os.getuid()}"
    assert stat.S_IMODE(os.stat(paths.runtime_dir()).st_mode) == 0o700


def test_an_existing_runtime_dir_open_to_others_is_closed(xdg: Path) -> None:
    (xdg / "tokend").mkdir(mode=0o777)
    os.chmod(xdg / "tokend", 0o777)
    paths.runtime_dir()
    assert stat.S_IMODE(os.stat(xdg / "tokend").st_mode) == 0o700


def test_a_runtime_dir_owned_by_someone_else_is_refused(xdg: Path) -> None:
    if os.getuid() == 0:
        (xdg / "tokend").mkdir(mode=0o700)
        os.chown(xdg / "tokend", 12345, 12345)
        with pytest.raises(paths.UnsafePathError, match="belongs to uid 12345, not to you"):
            paths.runtime_dir()
    else:
        # A user cannot give a folder away, but the root folder is root's on every system;
        # runtime_dir() is this check on $XDG_RUNTIME_DIR/tokend.
        with pytest.raises(paths.UnsafePathError, match="belongs to uid 0, not to you"):
            paths.ensure_private_dir(Path("/"))


def test_a_symlinked_runtime_dir_is_refused(xdg: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (xdg / "tokend").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(paths.UnsafePathError, match="not a directory"):
        paths.runtime_dir()


def test_socket_names_for_default_and_named_daemons(xdg: Path) -> None:
    assert paths.socket_path().name == "daemon.sock"
    assert paths.socket_path("work").name == "daemon-work.sock"
    with pytest.raises(ValueError):
        paths.socket_path("../escape")


def test_the_token_is_created_once_0600_and_reused(xdg: Path) -> None:
    token = paths.load_or_create_token()
    assert len(token) >= 32
    assert stat.S_IMODE(os.stat(paths.token_path()).st_mode) == 0o600
    assert paths.load_or_create_token() == token
    assert paths.read_token() == token


def test_a_token_file_readable_by_others_is_refused(xdg: Path) -> None:
    paths.load_or_create_token()
    os.chmod(paths.token_path(), 0o644)
    with pytest.raises(paths.UnsafePathError):
        paths.read_token()


def test_clients_refuse_a_daemon_path_that_is_not_a_socket(xdg: Path) -> None:
    paths.socket_path().write_text("not a socket")
    with pytest.raises(paths.UnsafePathError, match="not a socket"):
        connect_unix(paths.socket_path())


def test_listen_specs() -> None:
    assert parse_listen("unix:/run/x.sock") == ListenAddress("unix", path=Path("/run/x.sock"))
    assert parse_listen("tcp:127.0.0.1:7000") == ListenAddress("tcp", host="127.0.0.1", port=7000)
    assert str(parse_listen("tcp:[::1]:0")) == "tcp:[::1]:0"
    for public in (
        "tcp:0.0.0.0:7000",
        "tcp:192.168.1.5:7000",
        "tcp:example.org:7000",
        "tcp:[::]:1",
    ):
        with pytest.raises(ValueError, match="127.0.0.1 or ::1"):
            parse_listen(public)
    with pytest.raises(ValueError):
        parse_listen("tcp:127.0.0.1:http")


def test_remote_specs() -> None:
    assert parse_remote("auto") == ("auto", None)
    assert parse_remote("auto;work") == ("auto", "work")
    assert parse_remote("unix;/run/d.sock") == ("unix", "/run/d.sock")
    with pytest.raises(ValueError):
        parse_remote("tcp;127.0.0.1:1")


def test_the_daemon_command_is_the_real_tokend_unless_overridden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_DAEMON_CMD, raising=False)
    sock = Path("/run/d.sock")
    assert daemon_command(sock) == [
        sys.executable,
        "-m",
        "tokend",
        "serve",
        "--listen",
        "unix:/run/d.sock",
    ]
    monkeypatch.setenv(ENV_DAEMON_CMD, "python3 'my daemon.py' --idle-timeout 5")
    assert daemon_command(sock) == [
        "python3",
        "my daemon.py",
        "--idle-timeout",
        "5",
        "--listen",
        "unix:/run/d.sock",
    ]
