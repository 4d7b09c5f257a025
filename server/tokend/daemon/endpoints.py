"""Endpoints: the addresses the daemon listens on, and the peers it lets in.

A `--listen` spec is `unix:PATH` or loopback TCP (`tcp:127.0.0.1:PORT`, `tcp:[::1]:PORT`);
anything else is refused before binding. An accepted peer is checked again: TCP must come from
loopback, and a unix peer must run as our uid (SO_PEERCRED, where the platform has it).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from tokend.daemon.conn import PeerKind

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListenAddress:
    kind: PeerKind
    path: Path | None = None
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix:{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp:{host}:{self.port}"


def parse_listen(spec: str) -> ListenAddress:
    """Parse `unix:PATH` or `tcp:127.0.0.1:PORT` / `tcp:[::1]:PORT` (loopback only)."""
    kind, _, rest = spec.partition(":")
    if kind == "unix" and rest:
        return ListenAddress("unix", path=Path(rest).expanduser().absolute())
    if kind == "tcp" and ":" in rest:
        host, _, port_text = rest.rpartition(":")
        host = host.strip("[]")
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"--listen {spec}: tokend accepts TCP on 127.0.0.1 or ::1 only")
        if not port_text.isdigit() or int(port_text) > 65535:
            raise ValueError(f"--listen {spec}: the port must be a number 0-65535")
        return ListenAddress("tcp", host=host, port=int(port_text))
    raise ValueError(f"--listen {spec}: expected unix:PATH or tcp:127.0.0.1:PORT")


def check_peer(writer: asyncio.StreamWriter, peer: PeerKind) -> int | bool:
    """The peer's pid for unix peers of our uid, True for loopback TCP, False to refuse."""
    sock = writer.get_extra_info("socket")
    if peer == "tcp":
        host = writer.get_extra_info("peername")[0]
        if not ipaddress.ip_address(host.split("%")[0]).is_loopback:
            log.warning("refused a TCP connection from %s", host)
            return False
        return True
    if not hasattr(socket, "SO_PEERCRED") or sock is None:
        return True
    pid: int
    uid: int
    pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():
        log.warning("refused a unix connection from uid %d (pid %d)", uid, pid)
        return False
    return pid
