"""`tokend statusline`: Claude Code's statusLine command.

Claude Code pipes a JSON object to the command after each message (`session_id`,
`transcript_path`, `cwd`, `model`, `workspace`, `cost`, `context_window`, ...) and shows the first
line it prints; it runs the command on every refresh and shows nothing while it waits. The
command hands that JSON to the daemon (`statusline/line`), which follows the transcript named
there (idempotent) and renders tokend's gauge of that session:

    claude-opus-4-6 · 86k/200k · 43% · compacts at 168k · $1.23 · 5h 42% ↻2h10m · cache 3m

so the status line, the editors and the compaction decision show one number (the segments:
core/statusline/segments.py; `--segments` picks and orders them).

It is never the slow part of a prompt and never blank:
- warm (the daemon follows the transcript): one round trip on the unix socket (initialize,
  initialized and statusline/line written at once), and the command imports only os, sys and
  the C modules under socket and json (adapters.rendezvous: `quick_connect`, `loads`);
- the daemon runs but reads the transcript for the first time: it is given 0.1 s, then says so
  (`state: reading`) and the line is made from what is known (below) while the daemon reads on
  (its figures are partial until then);
- no daemon: `tokend follow claude-code FILE --detach` is started in the background (it starts
  the daemon), and the line is made from what is known at once.
What is known: the figures Claude Code passed on stdin (its own context window and cost), else
the last line printed for that session (kept in the runtime folder), else `tokend: starting`.
A daemon older than statusline/line is asked the way it understands (follow/start, then
budget/snapshot) and the line rendered here.
It never fails the status line: a problem is printed as a short `tokend: ...` line, exit code 0.

`tokend statusline codex [ROLLOUT]` is a Codex session's line, the same way (nothing on stdin;
commands/statusline_codex.py says what is known before the daemon answers).
"""

from __future__ import annotations

import os
import time

from tokend.adapters import rendezvous
from tokend.commands.statusline_codex import codex_known_line, given_for
from tokend.commands.statusline_known import (
    known_line,
    line_by_snapshot,
    remember,
    start_in_background,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

REPLY_SECONDS = 2.0  # a daemon busier than this gets the line made from what is known
METHOD_NOT_FOUND = -32601  # JSON-RPC: a daemon older than statusline/line
_INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,'
    b'"capabilities":{},"clientInfo":{"name":"tokend statusline"}}}'
)
_INITIALIZED = b'{"jsonrpc":"2.0","method":"initialized","params":{}}'


class _Failed(Exception):
    """The daemon answered statusline/line with an error (`code`, its message)."""

    def __init__(self, code: object, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def run_statusline(stdin: TextIO, out: TextIO, argv: Sequence[str] = ()) -> int:
    """`argv`: the command's own arguments (`[codex [ROLLOUT]] [--segments a,b,c]`)."""
    try:
        agent, rollout, segments = _arguments(argv)
    except ValueError as exc:
        out.write(f"tokend: {exc}\n")
        return 0
    if agent == "codex":  # nothing on stdin: a shell prompt or tmux runs it
        given = given_for(rollout)
        text = rendezvous.dumps(given)
    else:
        try:
            text = stdin.read()
        except UnicodeDecodeError:
            text = ""
        try:
            parsed = rendezvous.loads(text or "{}")
        except ValueError:
            parsed = None
        given = parsed if isinstance(parsed, dict) else {}
        text = text if isinstance(parsed, dict) else "{}"
    try:
        line = _line(text, given, segments, agent)
    except _Failed as exc:
        line = f"tokend: {exc.message}"
    except rendezvous.UnsafePathError as exc:
        line = f"tokend: {exc}"
    except OSError as exc:  # the runtime folder or the socket misbehaves: say so, briefly
        line = f"tokend: {exc.strerror or exc}"
    except Exception as exc:  # the older daemon's path: TokendError and kin
        line = f"tokend: {getattr(exc, 'message', None) or exc}"
    out.write(line + "\n")
    return 0


def _arguments(argv: Sequence[str]) -> tuple[str, str | None, tuple[str, ...] | None]:
    """(agent, the Codex rollout named or None, the segments asked for (None: all)), checked."""
    args = list(argv)
    agent, rollout = "claude-code", None
    if args[:1] in (["codex"], ["claude-code"]):
        agent = args.pop(0)
        if agent == "codex" and args and not args[0].startswith("-"):
            rollout = os.path.realpath(os.path.expanduser(args.pop(0)))
            if not os.path.isfile(rollout):
                raise ValueError(f"no Codex rollout at {rollout}")
    if not args:
        return agent, rollout, None
    if args[0].startswith("--segments="):
        args = ["--segments", args[0].split("=", 1)[1], *args[1:]]
    if len(args) != 2 or args[0] != "--segments":
        raise ValueError(f"unknown arguments {' '.join(args)!r}: see `tokend statusline --help`")
    from tokend.core.statusline.segments import parse_segments

    return agent, rollout, parse_segments(args[1])


def _line(text: str, given: dict[str, Any], segments: tuple[str, ...] | None, agent: str) -> str:
    """`text`: the JSON given to the daemon (a JSON object; `given` parsed)."""
    codex = agent == "codex"
    transcript = given.get("transcript_path")
    if not codex and (not isinstance(transcript, str) or not os.path.isfile(transcript)):
        return "tokend: no transcript to follow (run as Claude Code's statusLine command)"

    def known() -> str:
        return (
            codex_known_line(given, time.time(), segments)
            if codex
            else known_line(given, segments=segments)
        )

    try:
        sock = rendezvous.quick_connect(REPLY_SECONDS)
    except (FileNotFoundError, ConnectionRefusedError):
        path = os.path.realpath(transcript) if isinstance(transcript, str) else None
        start_in_background(path, given, agent)
        return known()
    try:
        result = _ask(sock, text, segments, agent)
    except TimeoutError:  # a busy daemon: the line must not wait for it
        return known()
    except _Failed as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        return known() if codex else line_by_snapshot(given, segments)
    finally:
        sock.close()
    state = result.get("state") if isinstance(result, dict) else None
    line = result.get("line") if isinstance(result, dict) else None
    if state == "current" and isinstance(line, str):
        remember(given, line, segments)
        return line
    if state == "waiting" and not codex:
        return known_line(given, "tokend: waiting for the first reply", segments)
    return known()  # the daemon's figures are partial until it has read on


def _ask(sock: Any, text: str, segments: tuple[str, ...] | None, agent: str) -> Any:
    """initialize, initialized and statusline/line written at once; statusline/line's result
    (its error raised as _Failed). No goodbye: the connection just closes."""
    chosen = b""
    if segments is not None:  # checked names: letters only
        chosen = b',"segments":[' + b",".join(b'"%s"' % n.encode() for n in segments) + b"]"
    colour = b"false" if os.environ.get("NO_COLOR") else b"true"
    request = (
        b'{"jsonrpc":"2.0","id":2,"method":"statusline/line","params":{"given":'
        + text.encode()
        + b',"colour":'
        + colour
        + chosen
        + (b',"agent":"codex"' if agent == "codex" else b"")
        + b"}}"
    )
    bodies = (_INITIALIZE % os.getpid(), _INITIALIZED, request)
    sock.sendall(b"".join(rendezvous.frame_bytes(body) for body in bodies))
    for body in rendezvous.frames(sock):
        reply = rendezvous.loads(body.decode("utf-8"))
        if not isinstance(reply, dict) or reply.get("id") != 2 or "method" in reply:
            continue  # the initialize reply, a notification
        error = reply.get("error")
        if isinstance(error, dict):
            raise _Failed(error.get("code"), str(error.get("message") or "the daemon failed"))
        return reply.get("result")
    raise ConnectionResetError(0, "the daemon closed the connection")
