"""`tokend follow claude-code|codex [FILE | --latest] [--workspace DIR]`: follow an agent's
transcript live.

The daemon does the following (follow/start; it is started when none runs), so every attached
editor sees the session's gauge move; this command prints a gauge line at each change and stops
the follower on Ctrl-C. With neither FILE nor --latest the daemon watches the agent's whole
sessions folder and picks up every session that starts there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from tokend.commands.live import BUDGET_DID_CHANGE, ChangeLines, LiveClient, gauge_line
from tokend.commands.output import say
from tokend.core.errors import InvalidParams


def run_follow(args: argparse.Namespace, out: TextIO) -> int:
    from tokend.service.transcripts.followers import agent_folder, latest_transcript

    agent = args.agent
    path: Path | None = args.file
    if args.latest:
        path = latest_transcript(agent)
        if path is None:
            raise InvalidParams(f"no {agent} transcript in {agent_folder(agent)}")
    params: dict[str, Any] = {"agent": agent}
    if path is not None:
        params["path"] = str(path.expanduser().resolve())
    if args.workspace is not None:
        params["workspaceUri"] = args.workspace.resolve().as_uri()
    client = LiveClient.open("tokend follow", start=True)
    assert client is not None
    with client:
        follower = client.request("follow/start", params)
        _report_start(out, follower)
        if args.detach:
            for transcript in follower["transcripts"]:
                if transcript["sessionId"]:
                    sid = transcript["sessionId"]
                    _print_gauge(out, client.request("budget/snapshot", {"sessionId": sid}))
            say(out, f"the daemon keeps following: `tokend follow --stop {follower['followerId']}`")
            return 0
        try:  # the daemon attached this connection to the session: its changes come to us
            _print_changes(client, out)
        except KeyboardInterrupt:
            stop_follower(follower["followerId"])
            raise
    return 0


def stop_follower(follower_id: str) -> dict[str, Any] | None:
    """follow/stop on a fresh connection (the one interrupted may be mid-frame); None when no
    daemon runs (then nothing follows anything)."""
    client = LiveClient.connect(client_name="tokend follow")
    if client is None:
        return None
    with client:
        result: dict[str, Any] = client.request("follow/stop", {"followerId": follower_id})
        return result


def run_follow_admin(args: argparse.Namespace, out: TextIO) -> int:
    """`tokend follow --list` and `tokend follow --stop ID`."""
    if args.stop:
        if stop_follower(args.stop) is None:
            say(out, "no daemon running: nothing is followed")
        else:
            say(out, f"stopped follower {args.stop}", "green")
        return 0
    client = LiveClient.connect(client_name="tokend follow")
    followers = client.request("follow/list") if client else {"followers": []}
    if client:
        client.close()
    if args.json:
        out.write(json.dumps(followers) + "\n")
        return 0
    for follower in followers["followers"]:
        say(out, f"{follower['followerId']}  {follower['agent']}  {follower['path']}")
        for t in follower["transcripts"]:
            say(out, f"  {t['path']} -> {t['sessionId'] or '-'}  ({t['messages']} messages)")
    if not followers["followers"]:
        say(out, "nothing is followed")
    return 0


def _report_start(out: TextIO, follower: dict[str, Any]) -> None:
    what = "the sessions in" if follower["folder"] else ""
    say(out, f"following {what} {follower['path']}".replace("  ", " "), "green")
    for transcript in follower["transcripts"]:
        where = transcript["sessionId"] or "(a session once the first reply is written)"
        say(out, f"  {transcript['path']} -> {where}")
        if transcript["error"]:
            say(out, f"  {transcript['error']}", "red")


def _print_changes(client: LiveClient, out: TextIO) -> None:
    """A gauge line per budget/didChange that changes the line, and a line when the agent
    compacted its context, until interrupted."""
    changes = ChangeLines()
    while True:
        message = client.next_notification()
        if message is None or message.get("method") != BUDGET_DID_CHANGE:
            continue
        snapshot = message["params"]["snapshot"]
        for text, style in changes.lines(snapshot):
            say(out, f"{snapshot['sessionId']}  {text}", style)


def _print_gauge(out: TextIO, snapshot: dict[str, Any]) -> None:
    out.write(f"{snapshot['sessionId']}  {gauge_line(snapshot)}\n")
    out.flush()
