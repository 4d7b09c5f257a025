"""`tokend statusline`'s command line as the argument parser knows it: what `--help` says, and
the words a call through the parser (`tokend --database-url URL statusline codex`) hands on.

A refresh does not use the parser (cli.main hands `statusline ...` to commands/status_quick.py,
which parses the few words itself, without importing argparse); `--help`, and a command line
with options before `statusline`, come here.
"""

from __future__ import annotations

import argparse

from tokend.core.statusline import SEGMENTS

AGENTS = ("claude-code", "codex")


def add_statusline_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
