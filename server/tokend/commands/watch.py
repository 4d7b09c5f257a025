"""`tokend watch [--session ID]`: the gauge and its breakdown, redrawn at every change.

Attaches to the session (the cwd's active one by default) through the daemon, started when none
runs, and redraws on each `budget/didChange`. On a terminal it is a rich live view with a bar
per category; piped, it prints the gauge line at each change (a log a script can read).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from tokend.commands.live import BUDGET_DID_CHANGE, LiveClient, context_rows, gauge_line
from tokend.commands.output import console, percent_style
from tokend.commands.status import daemon_snapshot

BAR_CELLS = 40


def run_watch(args: argparse.Namespace, out: TextIO) -> int:
    client = LiveClient.open("tokend watch", start=True)
    assert client is not None
    with client:
        snapshot, _ = daemon_snapshot(client, args.session, Path.cwd())
        session_id = snapshot["sessionId"]
        snapshot = client.request("session/attach", {"sessionId": session_id})
        if not out.isatty():
            return _log(client, out, session_id, snapshot)
        with Live(render(snapshot), console=console(out), auto_refresh=False) as live:
            while True:
                message = client.next_notification()
                if _is_change(message, session_id):
                    assert message is not None
                    live.update(render(message["params"]["snapshot"]), refresh=True)


def _log(client: LiveClient, out: TextIO, session_id: str, snapshot: dict[str, Any]) -> int:
    out.write(gauge_line(snapshot) + "\n")
    out.flush()
    while True:
        message = client.next_notification()
        if _is_change(message, session_id):
            assert message is not None
            out.write(gauge_line(message["params"]["snapshot"]) + "\n")
            out.flush()


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
