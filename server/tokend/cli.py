"""The `tokend` command: serve, lsp, stop, status, context, sessions, compact, fork, handoff,
models, config, import, replay, follow, statusline, watch, checkpoints, rewind."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import TextIO


def _parser() -> argparse.ArgumentParser:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(
        prog="tokend", description="The context-window daemon for AI coding agents."
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument(
        "--database-url", help="SQLAlchemy URL of the store (default: SQLite in the user data dir)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    _daemon_parsers(sub)
    from tokend.commands.status_args import add_status_parser

    add_status_parser(sub)
    from tokend.commands.live_args import add_live_parsers

    add_live_parsers(sub)
    _checkpoint_parsers(sub)

    context = sub.add_parser("context", help="a breakdown table of the active session's window")
    context.add_argument("--session", help="a session id (default: the workspace's active session)")
    context.add_argument("--json", action="store_true")

    _sessions_parser(sub)

    _history_parsers(sub)

    models = sub.add_parser("models", help="the model catalog")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    show = models_sub.add_parser("show", help="one model's window, output limit, prices, tokenizer")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    listing = models_sub.add_parser("list", help="the catalog's models, optionally filtered")
    listing.add_argument("pattern", nargs="?", help="only names matching this pattern")
    listing.add_argument("--json", action="store_true")

    config = sub.add_parser("config", help="the effective configuration and where it comes from")
    config.add_argument("--json", action="store_true")
    config.add_argument("--workspace", type=Path, help="a workspace folder (default: the cwd)")

    _transcript_parsers(sub)
    return parser


def _daemon_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`tokend serve`, `lsp` and `stop` (commands/serve.py)."""
    serve = sub.add_parser("serve", help="run the daemon in the foreground")
    serve.add_argument(
        "--listen", action="append", default=[], help="unix:PATH or tcp:127.0.0.1:PORT (repeatable)"
    )
    serve.add_argument(
        "--idle-timeout", type=float, default=None, help="seconds with no connection before exiting"
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--name", default=None, help="a separately named daemon")

    lsp = sub.add_parser("lsp", help="the stdio server editors launch (forwards to the daemon)")
    lsp.add_argument("--standalone", action="store_true", help="serve in this process, no daemon")
    lsp.add_argument("--remote", default="auto", help="auto, or auto;NAME for a named daemon")

    stop = sub.add_parser("stop", help="stop the running daemon")
    stop.add_argument("--name", default=None, help="a separately named daemon")


def _transcript_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`tokend import claude-code` and `replay` (commands/importer.py, replay.py)."""
    from pathlib import Path

    imp = sub.add_parser("import", help="import a transcript into a session")
    imp_sub = imp.add_subparsers(dest="import_kind", required=True)
    cc = imp_sub.add_parser("claude-code", help="a Claude Code JSONL transcript")
    cc.add_argument("file", type=Path)
    cc.add_argument("--context-window", type=int, default=None, help="override the model's window")
    cc.add_argument(
        "--workspace",
        type=Path,
        help="the new session's workspace folder (default: the transcript's cwd)",
    )
    cc.add_argument(
        "--skip-bad-lines",
        action="store_true",
        help="import the rest when a line is not a JSON record (default: refuse, naming it)",
    )
    cc.add_argument("--json", action="store_true")

    replay = sub.add_parser(
        "replay", help="replay a transcript and compare the gauge with provider usage"
    )
    replay.add_argument("file", type=Path)
    replay.add_argument("--json", action="store_true")


def _checkpoint_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`tokend checkpoints` and `tokend rewind` (commands/checkpoints.py), declared here (only
    here) so that parsing a command line never imports the store."""
    listing = sub.add_parser("checkpoints", help="what each turn of a session changed on disk")
    listing.add_argument("session_id", metavar="SESSION")
    listing.add_argument("--diff", metavar="MESSAGE", help="the unified diff of that turn")
    listing.add_argument("--path", help="with --diff: only this file")
    listing.add_argument("--json", action="store_true")
    rewind = sub.add_parser("rewind", help="put the files back as they were at a message")
    rewind.add_argument("session_id", metavar="SESSION")
    rewind.add_argument("message_id", metavar="MESSAGE")
    rewind.add_argument(
        "--dry-run", action="store_true", help="say what would change; write nothing"
    )
    rewind.add_argument("--force", action="store_true", help="also overwrite files changed since")
    rewind.add_argument("--json", action="store_true")


def _history_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`tokend compact`, `fork` and `handoff` (commands/compact.py, fork.py, handoff.py)."""
    compact = sub.add_parser(
        "compact",
        help="compact a session as its automatic compaction would (prune old tool output, then "
        "summarize older turns if that is not enough) and show before/after",
        description="Compact a session as its automatic compaction would: prune old tool "
        "output, then summarize older turns if that is not enough; show before and after. A "
        "session tokend follows from an agent's transcript is the agent's: refused (compact a "
        "`tokend fork` of it).",
    )
    compact.add_argument("session", nargs="?", help="a session id (default: the active one)")
    compact.add_argument("--json", action="store_true")
    fork = sub.add_parser("fork", help="a child session with the parent's messages (parent kept)")
    fork.add_argument("session", nargs="?", help="a session id (default: the active one)")
    fork.add_argument("--at", metavar="MESSAGE", help="copy up to and including this message")
    fork.add_argument("--json", action="store_true")
    handoff = sub.add_parser(
        "handoff", help="a new session for a goal, starting with the context and relevant files"
    )
    handoff.add_argument("session", nargs="?", help="a session id (default: the active one)")
    handoff.add_argument("--goal", required=True, help="what the new session is for")
    handoff.add_argument("--json", action="store_true")


def _sessions_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = sub.add_parser(
        "sessions", help="the workspace's sessions and their gauges; delete, restore, rename"
    )
    sessions.add_argument(
        "--all-workspaces", action="store_true", help="every workspace's, not only the cwd's"
    )
    sessions.add_argument(
        "--deleted", action="store_true", help="the deleted sessions instead (to restore one)"
    )
    sessions.add_argument("--json", action="store_true")
    actions = sessions.add_subparsers(dest="sessions_command")
    for name, text in (
        ("delete", "hide a session (its messages stay in the store)"),
        ("restore", "bring a deleted session back"),
        ("rename", "set a session's title"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("session_id", metavar="ID")
        if name == "rename":
            action.add_argument("title", metavar="TITLE")
        action.add_argument("--json", action="store_true")


def _version() -> str:
    import tokend

    return f"tokend {tokend.__version__}"


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] in (["statusline"], ["status"]):  # run at every refresh: nothing heavy
        from tokend.commands.status_quick import quick

        if (done := quick(given, sys.stdin, sys.stdout)) is not None:
            return done
    args = _parser().parse_args(argv)
    from tokend.core.errors import SessionNotFound, TokendError

    try:
        return _dispatch(args)
    except SessionNotFound as exc:
        missing = exc.data.get("sessionId") if isinstance(exc.data, dict) else None
        # the protocol's hint (session/create) is for clients: a person gets commands
        text = (
            f"no session {missing}: `tokend sessions` lists this folder's sessions "
            "(--all-workspaces: every folder's, --deleted: the deleted ones)"
            if missing
            else exc.message
        )
        print(f"tokend: {text}", file=sys.stderr)
        return 2
    except TokendError as exc:
        print(f"tokend: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `tokend sessions | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


RUN_WITH_ARGS = {
    "config": ("config", "run_config"),
    "sessions": ("sessions", "run_sessions"),
    "compact": ("compact", "run_compact"),
    "fork": ("fork", "run_fork"),
    "handoff": ("handoff", "run_handoff"),
    "stop": ("serve", "run_stop"),
    "status": ("status", "run_status"),
    "context": ("status", "run_context"),
    "checkpoints": ("checkpoints", "run_checkpoints"),
    "rewind": ("checkpoints", "run_rewind"),
    "watch": ("watch", "run_watch"),
}
"""Commands run as tokend.commands.MODULE.FUNCTION(args, stdout), imported only when run."""


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in RUN_WITH_ARGS:
        from importlib import import_module

        module, function = RUN_WITH_ARGS[args.command]
        run: Callable[[argparse.Namespace, TextIO], int]
        run = getattr(import_module(f"tokend.commands.{module}"), function)
        return run(args, sys.stdout)
    if args.command == "replay":
        from tokend.commands.replay import run_replay

        return run_replay(args.file, args.json, sys.stdout)
    if args.command == "models":
        from tokend.commands.models import list_models, show_model

        if args.models_command == "list":
            return list_models(args.pattern, args.json, sys.stdout)
        return show_model(args.name, args.json, sys.stdout)
    if args.command in ("serve", "lsp"):
        from tokend.commands.serve import run_lsp, run_serve

        return run_serve(args) if args.command == "serve" else run_lsp(args)
    if args.command == "import":
        from tokend.commands.importer import import_claude_code

        return import_claude_code(
            args.file,
            args.database_url,
            args.context_window,
            args.workspace,
            args.json,
            sys.stdout,
            args.skip_bad_lines,
        )
    if args.command == "follow":
        from tokend.commands.follow import run_follow, run_follow_admin
        from tokend.core.errors import TokendError

        if args.list or args.stop:
            return run_follow_admin(args, sys.stdout)
        if args.agent is None:
            raise TokendError("say which agent to follow: tokend follow claude-code|codex")
        return run_follow(args, sys.stdout)
    if args.command == "statusline":
        from tokend.commands.live_args import statusline_words
        from tokend.commands.statusline import run_statusline

        return run_statusline(sys.stdin, sys.stdout, statusline_words(args))
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
