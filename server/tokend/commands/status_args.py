"""`tokend status`'s command line as the argument parser knows it (`--help`, and a command line
with options before `status`). A call from a prompt does not use the parser: cli.main hands
`status ...` to commands/status_quick.py, which reads its few words itself."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
A one-line gauge of the current folder's newest session (or --session ID): asked of the running
daemon when one answers. With no daemon, the line (and --format claude-code) comes from the
session's row in the store at once; --json, a store that is not a SQLite file, a row written by
an older tokend or a config file changed since read the store whole.

With no daemon, the daemon is also started in the background (never waited for; it exits after
idle_timeout_s without a connection), so that the next call is answered by it. Turn that off with
`[status] start_daemon = false` in the user config, or TOKEND_START_DAEMON=0."""


def add_status_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = sub.add_parser(
        "status",
        help="a one-line gauge of the active session",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    status.add_argument("--json", action="store_true")
    status.add_argument("--session", help="a session id (default: the workspace's active session)")
    status.add_argument("--daemon", action="store_true", help="the daemon's status instead")
    status.add_argument(
        "--format",
        choices=["line", "json", "claude-code"],
        default="line",
        help="line (default), json (the Snapshot), or claude-code (its statusLine JSON shape)",
    )
