"""The live commands' command lines as the argument parser knows them (cli.py keeps the rest):
`tokend follow`, `tokend statusline` and `tokend watch`, and the words a `statusline` call
through the parser hands on.

A refresh of the status line does not use the parser (cli.main hands `statusline ...` to
commands/status_quick.py, which reads its few words without importing argparse); `--help`, and
a command line with options before `statusline` (`tokend --database-url URL statusline codex`),
come here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tokend.core.statusline.segments import SEGMENTS

AGENTS = ("claude-code", "codex")


def add_live_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    follow = sub.add_parser(
        "follow", help="follow a Claude Code or Codex session live (the daemon tails its file)"
    )
    follow.add_argument("agent", nargs="?", choices=AGENTS)
    follow.add_argument(
        "file", nargs="?", type=Path, help="a transcript (default: every session of the agent)"
    )
    follow.add_argument("--latest", action="store_true", help="the agent's newest transcript")
    follow.add_argument(
        "--workspace", type=Path, help="the session's workspace folder (default: the agent's cwd)"
    )
    follow.add_argument(
        "--detach", action="store_true", help="leave the daemon following and return"
    )
    follow.add_argument("--list", action="store_true", help="what the daemon follows")
    follow.add_argument("--stop", metavar="ID", help="stop the daemon's follower ID")
    follow.add_argument("--json", action="store_true")
    _statusline_parser(sub)
    watch = sub.add_parser("watch", help="a live gauge and breakdown, redrawn at every change")
    watch.add_argument("--session", help="a session id (default: the workspace's active session)")


def _statusline_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    statusline = sub.add_parser(
        "statusline",
        help="Claude Code's statusLine command (JSON on stdin), or `statusline codex [ROLLOUT]`",
        description="One status line of tokend's gauge, never blank: Claude Code's statusLine "
        "command (Claude Code's JSON on stdin), or, with `codex`, a Codex session's line for a "
        "shell prompt or tmux (nothing on stdin).",
    )
    statusline.add_argument(
        "agent",
        nargs="?",
        choices=AGENTS,
        default="claude-code",
        help="claude-code (the default: Claude Code's JSON on stdin) or codex",
    )
    statusline.add_argument(
        "rollout",
        nargs="?",
        metavar="ROLLOUT",
        help="with codex: a Codex rollout file (default: the one Codex wrote last in "
        "$CODEX_HOME/sessions)",
    )
    statusline.add_argument(
        "--segments",
        help=f"which segments, in order, comma-separated: {','.join(SEGMENTS)} (default: "
        "[statusline] segments of the config, else all; rate, cache and compactions only "
        "when known)",
    )


def statusline_words(args: argparse.Namespace) -> list[str]:
    """The words after `statusline` that commands/statusline.py takes, from parsed `args`."""
    words = [args.agent, *([args.rollout] if args.rollout is not None else [])]
    return words + (["--segments", args.segments] if args.segments else [])
