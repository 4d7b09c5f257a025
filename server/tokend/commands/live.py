"""What the live terminal commands share: a daemon connection that also hears notifications,
and the gauge as text, made from the wire Snapshot (protocol.md) like every client's.

Imports stay light (no store, no pygls): `tokend status` and `tokend statusline` run in shell
prompts and status lines, where every millisecond of start-up shows.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any, Self

from tokend.commands.rpc_client import DaemonClient
from tokend.commands.status_text import claude_code_status, gauge_line
from tokend.core.errors import TokendError
from tokend.core.statusline.segments import short_gauge, short_tokens

BUDGET_DID_CHANGE = "budget/didChange"
__all__ = [
    "BUDGET_DID_CHANGE",
    "ChangeLines",
    "LiveClient",
    "claude_code_status",
    "context_rows",
    "gauge_line",
    "short_gauge",
    "short_tokens",
]


class LiveClient(DaemonClient):
    """A DaemonClient that keeps the notifications it reads, for `next_notification`."""

    def __init__(self, sock: Any) -> None:
        super().__init__(sock)
        self._notifications: deque[dict[str, Any]] = deque()

    @classmethod
    def open(cls, client_name: str, *, start: bool) -> Self | None:
        """Connected and initialized; with `start`, the daemon is started when none runs (as
        `tokend lsp` does), else None is returned then."""
        if not start:
            return cls.connect(client_name=client_name)
        from tokend.daemon.spawn import DaemonUnavailable, connect_or_spawn

        try:
            sock = connect_or_spawn()
        except (DaemonUnavailable, OSError) as exc:
            raise TokendError(f"cannot reach the tokend daemon: {exc}") from None
        sock.settimeout(300.0)
        client = cls(sock)
        client.request(
            "initialize",
            {"processId": os.getpid(), "capabilities": {}, "clientInfo": {"name": client_name}},
        )
        client.notify("initialized", {})
        return client

    def _read(self) -> dict[str, Any]:
        """Every frame read, as DaemonClient reads it; notifications are also kept."""
        body = super()._read()
        if "method" in body and "id" not in body:
            self._notifications.append(body)
        return body

    def next_notification(self) -> dict[str, Any]:
        """The next notification (kept or new), waiting for it. No time limit: a read that
        timed out would leave the connection's reader unusable (socket.makefile), so a caller
        that must look elsewhere meanwhile waits between requests instead."""
        if self._notifications:
            return self._notifications.popleft()
        self._sock.settimeout(None)  # an agent may not reply for hours
        try:
            while True:
                body = super()._read()
                if "method" in body and "id" not in body:
                    return body
        finally:
            self._sock.settimeout(300.0)


class ChangeLines:
    """What a terminal prints for each budget/didChange: the gauge line when it changed (a
    repeat is not printed), preceded by a note when the session was compacted meanwhile (by
    the agent, for a followed transcript: its figure drops)."""

    def __init__(self) -> None:
        self._shown: dict[str, tuple[str, int, int]] = {}  # session -> (line, compactions, used)

    def lines(self, snapshot: dict[str, Any]) -> list[tuple[str, str | None]]:
        """(text, style) pairs to print, oldest first; empty for a repeat."""
        session_id, line = snapshot["sessionId"], gauge_line(snapshot)
        before = self._shown.get(session_id)
        self._shown[session_id] = (line, snapshot["compactions"], snapshot["usedTokens"])
        out: list[tuple[str, str | None]] = []
        if before is not None and snapshot["compactions"] > before[1]:
            out.append(
                (
                    f"compacted: {before[2]:,} -> {snapshot['usedTokens']:,} tokens "
                    f"(compaction {snapshot['compactions']} of this session)",
                    "yellow",
                )
            )
        if before is None or before[0] != line:
            out.append((line, None))
        return out


def context_rows(s: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(category, tokens, basis) rows that add up to the context window: the breakdown, then
    free space, the autocompact buffer and the output reserve."""
    rows = [(b["category"], b["tokens"], b["basis"]) for b in s["breakdown"]]
    window, threshold = s["contextWindow"], s["autocompactThreshold"]
    reserve = min(s["maxOutputTokens"], max(0, window - threshold))
    buffer = max(0, window - threshold - reserve)
    free = max(0, window - s["usedTokens"] - reserve - buffer)
    rows.append(("free space", free, "derived"))
    rows.append(("autocompact buffer", buffer, "config"))
    rows.append(("output reserve", reserve, "catalog"))
    return rows
