"""The daemon started in the background by a `tokend status` that found none, as a shell prompt
starts gitstatusd (powerlevel10k): detached, never waited for, its life bounded by its own idle
exit (`idle_timeout_s`, 60 s by default). The call that starts it prints what it knows at once
(commands/status_row.py, else the store read whole); the next one finds the daemon warm.

A prompt shown more often than the idle timeout pays one start (about a second of CPU) per
working stretch; one shown less often pays it at every prompt, in the background (BENCHMARKS.md,
bench `statusline`). Off with `[status] start_daemon = false` in the user config, or
TOKEND_START_DAEMON=0 in the environment (which wins over the config).

The start is `python -m tokend serve --listen unix:<runtime folder>/daemon.sock` (or
TOKEND_DAEMON_CMD's, as daemon/spawn.py), spawned with os.posix_spawn: its own session, stdio to
/dev/null (the daemon logs to its own file), TOKEND_DETACHED=1. daemon/spawn.py does the same
for a forwarder that waits for the daemon; importing it (subprocess, logging, secrets) would cost
a prompt more than the start itself. Two prompts at once start one: the second finds the first's
flock on the marker (`status/starting`), and a start younger than START_AGAIN_SECONDS is not
made again; the daemon's own lock on its socket (daemon/paths.py) is the last word.
"""

from __future__ import annotations

import os
import sys

from tokend.adapters import rendezvous

ENV = "TOKEND_START_DAEMON"
ENV_DAEMON_CMD = "TOKEND_DAEMON_CMD"  # as daemon/spawn.py: tests start their own daemon
ENV_DETACHED = "TOKEND_DETACHED"
START_AGAIN_SECONDS = 30.0  # a start younger than this is not made again (a daemon that failed)
MARKER = os.path.join("status", "starting")
OFF = ("0", "false", "no", "off")


def start_wanted() -> bool:
    """False when the user turned the background start off (the environment, else the user
    config's `[status] start_daemon`; a value the config refuses leaves it on, as the
    settings do)."""
    value = os.environ.get(ENV)
    if value is not None and value.strip():
        return value.strip().lower() not in OFF
    from tokend.adapters.store_peek import user_config

    section = user_config().get("status")
    return not (isinstance(section, dict) and section.get("start_daemon") is False)


def start_daemon() -> int | None:
    """Start the daemon detached unless it is off or was started a moment ago; its process id
    (None: not started). Never waits for it, never raises."""
    if not start_wanted():
        return None
    import fcntl
    import time

    folder = rendezvous.runtime_location()
    try:
        for path in (folder, os.path.join(folder, os.path.dirname(MARKER))):
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                rendezvous.check_private_folder(path)
        marker = os.open(
            os.path.join(folder, MARKER), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
    except (OSError, rendezvous.UnsafePathError):
        return None
    try:
        fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another prompt is starting it
        info = os.fstat(marker)  # empty: just made, no start yet
        if info.st_size and time.time() - info.st_mtime < START_AGAIN_SECONDS:
            return None
        os.pwrite(marker, b"started\n", 0)
        os.utime(marker)
        return _spawn(os.path.join(folder, rendezvous.DEFAULT_SOCKET))
    except (OSError, NotImplementedError):  # NotImplementedError: no POSIX_SPAWN_SETSID here
        return None
    finally:
        os.close(marker)  # releases the flock


def _spawn(sock: str) -> int:
    override = os.environ.get(ENV_DAEMON_CMD)
    if override:
        import shlex

        command = shlex.split(override)
    else:
        command = [sys.executable, "-m", "tokend", "serve"]
    command += ["--listen", f"unix:{sock}"]
    program = command[0] if os.sep in command[0] else _which(command[0])
    null = os.devnull
    return os.posix_spawn(
        program,
        command,
        {**os.environ, ENV_DETACHED: "1"},
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ],
        setsid=True,
    )


def _which(name: str) -> str:
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(name)
