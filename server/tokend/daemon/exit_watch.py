"""What the forwarder needs to tell a normal close from a dead daemon, and to say which.

- `ExitWatch` follows the editor's LSP frames (headers only; small bodies are parsed) to notice
  the `exit` notification, after which the daemon closing the connection is the normal end.
- `peer_pid` is the daemon's pid, from the connected unix socket (SO_PEERCRED / LOCAL_PEERPID).
- `daemon_fate` words the one line the forwarder writes when the daemon went away: stopped
  (its log ends with "daemon stopped"), died (killed or crashed), or alive but closed this
  connection; and how to restart.

Stdlib only: `tokend lsp` must start fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
import time
from pathlib import Path

MAX_HEADER_BYTES = 4096
MAX_WATCHED_BODY_BYTES = 512  # `exit` is ~40 bytes; bigger bodies are skipped unparsed
GONE_WAIT_SECONDS = 10.0  # for a daemon that closed its connections to finish exiting (it ends
# its background work first: a few seconds at most)
LOG_TAIL_BYTES = 64 << 10


class ExitWatch:
    """Feed it what the editor sends; `exit_sent` turns True once `exit` went by. If the
    editor's framing cannot be followed it gives up (`exit_sent` stays False)."""

    def __init__(self) -> None:
        self.exit_sent = False
        self.shutdown_sent = False  # a `shutdown` request went by (before `exit`: exit code 0)
        self._lost = False
        self._header = bytearray()
        self._body_left = 0
        self._body: bytearray | None = None

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._lost:
            if self._body_left:
                take = min(self._body_left, len(view))
                if self._body is not None:
                    self._body += view[:take]
                self._body_left -= take
                view = view[take:]
                if not self._body_left:
                    self._body_done()
                continue
            self._header += view
            view = memoryview(b"")
            end = self._header.find(b"\r\n\r\n")
            if end < 0:
                self._lost = len(self._header) > MAX_HEADER_BYTES
                return
            length = _content_length(bytes(self._header[:end]))
            rest = bytes(self._header[end + 4 :])
            self._header = bytearray()
            if length is None:
                self._lost = True
                return
            self._body_left = length
            self._body = bytearray() if length <= MAX_WATCHED_BODY_BYTES else None
            if not length:
                self._body_done()
            view = memoryview(rest)

    def _body_done(self) -> None:
        body, self._body = self._body, None
        if body is None:
            return
        with contextlib.suppress(ValueError):
            message = json.loads(bytes(body))
            if isinstance(message, dict) and message.get("method") == "exit":
                self.exit_sent = True
            elif isinstance(message, dict) and message.get("method") == "shutdown":
                self.shutdown_sent = True


def _content_length(headers: bytes) -> int | None:
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return None


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process at the other end of a connected unix socket, if the OS says."""
    try:
        if hasattr(socket, "SO_PEERCRED"):
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return struct.unpack("3i", raw)[0] or None
        if sys.platform == "darwin":
            sol_local, local_peerpid = 0, 2
            pid: int = sock.getsockopt(sol_local, local_peerpid)
            return pid or None
    except OSError:
        pass
    return None


def daemon_fate(pid: int | None, how: str, log: Path) -> str:
    """One line: what happened to the daemon, and how to get a new one."""
    restart = "restart the tokend language server (or run `tokend lsp` again) to start a new one"
    if pid is None:
        return f"the daemon {how} the connection; {restart} (log: {log})"
    if not _gone_within(pid, GONE_WAIT_SECONDS):
        return (
            f"the daemon (pid {pid}) closed this connection; see its log ({log}), then restart "
            "the tokend language server to reconnect"
        )
    if _logged_a_clean_stop(pid, log):
        return f"the daemon (pid {pid}) was stopped (SIGTERM or `tokend stop`); {restart}"
    return (
        f"the daemon (pid {pid}) died (killed or crashed; connection {how}); {restart} (log: {log})"
    )


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if _gone(pid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def process_gone(pid: int) -> bool:
    """True once process `pid` has exited (a zombie counts as gone)."""
    return _gone(pid)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is gone too
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def _logged_a_clean_stop(pid: int, log: Path) -> bool:
    """True if the daemon's log says this pid stopped cleanly (the listener's last line)."""
    if log.is_dir():
        return False
    try:
        with open(log, "rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            tail = file.read()
    except OSError:
        return False
    return f" {pid} INFO tokend.daemon.listener: daemon stopped".encode() in tail
