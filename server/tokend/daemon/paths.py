"""Where the per-user daemon lives: its private runtime dir, socket, token, locks and log.

Layout (one directory per user, mode 0700, owned by that user):

    $XDG_RUNTIME_DIR/tokend/        (else <tempdir>/tokend-<uid>/)
        daemon.sock                 the default daemon's unix socket (0600)
        daemon-<NAME>.sock          a named daemon (`tokend lsp --remote=auto;NAME`)
        daemon.sock.lock            held (flock) by the live daemon for its whole life
        spawn.lock                  held by a forwarder while it starts a daemon
        token                       random token TCP clients send as initializationOptions.authToken

Logs go to platformdirs.user_state_dir("tokend").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import secrets
import socket
import stat
import time
from pathlib import Path

import platformdirs

from tokend.adapters.own_folders import runtime_location
from tokend.adapters.rendezvous import UnsafePathError as UnsafePathError

_DAEMON_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
# sun_path is 108 bytes on Linux and 104 on macOS, including the terminating NUL.
MAX_UNIX_SOCKET_PATH_BYTES = 103


log = logging.getLogger(__name__)
LOCK_WAIT_SECONDS = 15.0  # for a previous daemon that is stopping to release the lock: it holds
# it until its process ends (requests in flight answered, background work ended)


class DaemonAlreadyRunning(RuntimeError):
    """Another live daemon serves this socket; this one must exit."""


def runtime_dir() -> Path:
    """The user's private runtime dir, created 0700 and checked to be owned by us."""
    return ensure_private_dir(runtime_location())


def ensure_private_dir(path: Path) -> Path:
    """Create `path` 0700 if absent; refuse it if it is a symlink, not a dir, or not ours."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(f"{path} is not a directory; remove it")
    if info.st_uid != os.getuid():
        raise UnsafePathError(
            f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}); "
            "remove it or set XDG_RUNTIME_DIR to a private directory"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def check_daemon_name(name: str) -> str:
    if not _DAEMON_NAME.fullmatch(name):
        raise ValueError(f"daemon name {name!r}: use 1-32 letters, digits, '_', '.' or '-'")
    return name


def socket_path(name: str | None = None) -> Path:
    """The unix socket of the default daemon, or of the daemon called `name`."""
    file_name = "daemon.sock" if name is None else f"daemon-{check_daemon_name(name)}.sock"
    return runtime_dir() / file_name


def spawn_lock_path(name: str | None = None) -> Path:
    """The lock a forwarder holds while it starts the daemon, so only one is started."""
    return runtime_dir() / (
        "spawn.lock" if name is None else f"spawn-{check_daemon_name(name)}.lock"
    )


def daemon_lock_path(sock: Path) -> Path:
    """The lock a live daemon holds on its socket path for its whole life."""
    return sock.with_name(sock.name + ".lock")


def token_path() -> Path:
    return runtime_dir() / "token"


def check_socket_path_length(path: Path) -> None:
    if len(os.fsencode(path)) > MAX_UNIX_SOCKET_PATH_BYTES:
        raise ValueError(
            f"unix socket path is too long ({len(os.fsencode(path))} bytes, max "
            f"{MAX_UNIX_SOCKET_PATH_BYTES}): {path}; set XDG_RUNTIME_DIR to a shorter directory"
        )


def read_token(path: Path | None = None) -> str:
    """The TCP auth token, read from a 0600 file owned by us."""
    path = path or token_path()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "r", encoding="ascii") as file:
        info = os.fstat(file.fileno())
        if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise UnsafePathError(f"{path} must be owned by you with mode 0600; remove it")
        return file.read().strip()


def load_or_create_token(path: Path | None = None) -> str:
    """Read the token file, creating it (0600, secrets.token_urlsafe) if absent.

    Creation is atomic (write a temp file, then link it into place, which fails if another
    daemon won the race), so concurrent daemons agree on one token.
    """
    path = path or token_path()
    try:
        token = read_token(path)
        if token:
            return token
        path.unlink()
    except FileNotFoundError:
        pass
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(secrets.token_urlsafe(32) + "\n")
    try:
        os.link(temp, path)
    except FileExistsError:
        pass
    finally:
        temp.unlink()
    return read_token(path)


def log_dir() -> Path:
    path = Path(platformdirs.user_state_dir("tokend"))
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def log_path(name: str | None = None) -> Path:
    """The daemon's log file (the daemon never writes stdout)."""
    return log_dir() / ("daemon.log" if name is None else f"daemon-{check_daemon_name(name)}.log")


def bind_unix_socket(path: Path) -> tuple[socket.socket, int]:
    """Bind and listen on `path` (mode 0600 from the start); returns (socket, lock fd).

    Raises DaemonAlreadyRunning if a live daemon holds the path. A stale socket file (nobody
    accepts on it) is replaced.
    """
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    check_socket_path_length(temp)
    lock_fd = _lock_socket_path(path)
    try:
        _remove_stale_socket(path)
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous_umask = os.umask(0o177)
        try:
            sock.bind(str(temp))
        finally:
            os.umask(previous_umask)
        os.chmod(temp, 0o600)
        sock.listen(128)
        os.replace(temp, path)
    except BaseException:
        os.close(lock_fd)
        raise
    return sock, lock_fd


def _lock_socket_path(path: Path) -> int:
    lock_fd = os.open(daemon_lock_path(path), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock_fd
        except BlockingIOError:
            # Held: a live daemon (refuse now) or one that is shutting down (wait a little).
            if _answers(path) or time.monotonic() > deadline:
                os.close(lock_fd)
                raise DaemonAlreadyRunning(
                    f"a tokend daemon is already running on {path}; use it, or stop it first"
                ) from None
            time.sleep(0.05)


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
        return True
    except (ConnectionRefusedError, FileNotFoundError):
        return False
    except OSError as exc:
        return exc.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    finally:
        probe.close()


def _remove_stale_socket(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise UnsafePathError(f"{path} exists and is not a socket; remove it")
    if _answers(path):
        raise DaemonAlreadyRunning(
            f"another process is listening on {path}; refusing to replace it"
        )
    log.info("replacing stale socket %s (left by a daemon that died)", path)
    path.unlink(missing_ok=True)
