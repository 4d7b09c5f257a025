"""`tokend watch [--session ID]`: the gauge and its breakdown, redrawn at every change.

Attaches to the session (the cwd's active one by default) through the daemon, started when none
runs, and redraws on each `budget/didChange`. On a terminal it is a rich live view with a bar
per category; piped, it prints the gauge line at each change (a log a script can read).
With no session in the workspace yet it says so and waits for one; when the daemon stops it
says so and waits for it to come back (`tokend watch: ...` lines), until interrupted.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, TextIO

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tokend.commands.live import (
    BUDGET_DID_CHANGE,
    ChangeLines,
    LiveClient,
    context_rows,
    gauge_line,
)
from tokend.commands.output import console, percent_style
from tokend.commands.rpc_client import DaemonGone
from tokend.commands.status import daemon_snapshot
from tokend.core.errors import SessionNotFound

BAR_CELLS = 40


RETRY_SECONDS = 1.0  # how often watch looks again for a session, or for the daemon


def run_watch(args: argparse.Namespace, out: TextIO) -> int:
    """Until interrupted: the daemon is started the first time; when it stops, watch says so
    and waits for it to come back; with no session yet, it says so and waits for one."""
    start = True
    while True:
        client = LiveClient.open("tokend watch", start=start)
        start = False
        if client is None:
            time.sleep(RETRY_SECONDS)
            continue
        try:
            with client:
                _watch(client, args.session, out)
        except DaemonGone:
            _state(out, "the tokend daemon stopped; waiting for it to come back (Ctrl-C to quit)")
            time.sleep(RETRY_SECONDS)


def _watch(client: LiveClient, wanted: str | None, out: TextIO) -> None:
    snapshot = _session_snapshot(client, wanted, out)
    session_id = snapshot["sessionId"]
    snapshot = client.request("session/attach", {"sessionId": session_id})
    if not out.isatty():
        _log(client, out, session_id, snapshot)
        return
    with Live(render(snapshot), console=console(out), auto_refresh=False) as live:
        while True:
            message = client.next_notification()
            if _is_change(message, session_id):
                assert message is not None
                live.update(render(message["params"]["snapshot"]), refresh=True)


def _session_snapshot(client: LiveClient, wanted: str | None, out: TextIO) -> dict[str, Any]:
    """The snapshot of `wanted` (or the cwd's newest session), waiting for a session to
    appear in the cwd's workspace when it has none yet."""
    said = False
    while True:
        try:
            snapshot, _ = daemon_snapshot(client, wanted, Path.cwd())
            return snapshot
        except SessionNotFound:
            if wanted is not None:
                raise
            if not said:
                _state(out, f"no session in {Path.cwd()} yet; waiting for one (Ctrl-C to quit)")
                said = True
            # a plain wait: a timed-out read would leave the connection's reader unusable
            # (socket.makefile), and the next request would take the daemon for gone
            time.sleep(RETRY_SECONDS)


def _state(out: TextIO, text: str) -> None:
    out.write(f"tokend watch: {text}\n")
    out.flush()


def _log(client: LiveClient, out: TextIO, session_id: str, snapshot: dict[str, Any]) -> None:
    changes = ChangeLines()
    while True:
        for text, _style in changes.lines(snapshot):
            out.write(text + "\n")
        out.flush()
        message = client.next_notification()
        while not _is_change(message, session_id):
            message = client.next_notification()
        assert message is not None
        snapshot = message["params"]["snapshot"]


def _is_change(message: dict[str, Any] | None, session_id: str) -> bool:
    return (
        message is not None
        and message.get("method") == BUDGET_DID_CHANGE
        and message["params"].get("sessionId") == session_id
    )


def render(s: dict[str, Any]) -> Group:
    """The gauge line, then one bar per category of the window (free space and reserves
    included), then the warnings."""
    window = s["contextWindow"] or 1
    pct = s["usedPercentage"]
    table = Table(box=None, pad_edge=False, show_header=False)
    for column in ("category", "bar", "tokens", "%"):
        table.add_column(column, justify="right" if column in ("tokens", "%") else "left")
    for category, tokens, _basis in context_rows(s):
        share = tokens / window
        cells = round(share * BAR_CELLS)
        style = "dim" if category in ("free space", "output reserve", "autocompact buffer") else ""
        bar = Text("█" * cells + "·" * (BAR_CELLS - cells), style=style or "cyan")
        table.add_row(category, bar, f"{tokens:,}", f"{100 * share:.1f}%")
    parts: list[Any] = [Text(gauge_line(s), style=percent_style(pct)), table]
    parts += [Text(f"warning: {w}", style="yellow") for w in s["warnings"]]
    return Group(*parts)
