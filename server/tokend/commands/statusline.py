"""`tokend statusline`: Claude Code's statusLine command.

Claude Code pipes a JSON object to the command after each message (`session_id`,
`transcript_path`, `cwd`, `model`, `workspace`, `cost`, `context_window`, ...) and shows the first
line it prints; it runs the command on every refresh and shows nothing while it waits. This
command asks the daemon to follow the transcript named there (idempotent) and prints tokend's
gauge of that session:

    claude-opus-4-6 · 86k/200k · 43% · compacts at 168k · $1.23 · 5h 42% ↻2h10m · cache 3m

so the status line, the editors and the compaction decision show one number (the segments:
statusline_segments.py; `--segments` picks and orders them).

It is never the slow part of a prompt and never blank:
- warm (the daemon follows the transcript): two requests on the unix socket; the command imports
  only the standard library's os, socket and json beyond its own few modules;
- the daemon runs but reads the transcript for the first time: it is given FIRST_ANSWER_SECONDS,
  then the line is made from what is known (below) while the daemon reads on (its figures are
  partial until the follower says `caughtUp`);
- no daemon: `tokend follow claude-code FILE --detach` is started in the background (it starts
  the daemon), and the line is made from what is known at once.
What is known: the figures Claude Code passed on stdin (its own context window and cost), else
the last line printed for that session (kept in the runtime folder), else `tokend: starting`.
It never fails the status line: a problem is printed as a short `tokend: ...` line, exit code 0.
"""

from __future__ import annotations

import json
import os
import re

from tokend.adapters import rendezvous
from tokend.commands.live import LiveClient, short_tokens
from tokend.commands.rpc_client import NoReply
from tokend.commands.statusline_segments import SEGMENTS, parse_segments, render
from tokend.core.errors import TokendError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

FIRST_ANSWER_SECONDS = 0.1  # what a daemon reading a new transcript is given before we answer
START_AGAIN_SECONDS = 30.0  # a background start younger than this is not started twice
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def run_statusline(stdin: TextIO, out: TextIO, argv: Sequence[str] = ()) -> int:
    """`argv`: the command's own arguments (`--segments a,b,c`)."""
    try:
        segments = _segments_wanted(argv)
    except ValueError as exc:
        out.write(f"tokend: {exc}\n")
        return 0
    try:
        given = json.loads(stdin.read() or "{}")
    except ValueError:
        given = {}
    if not isinstance(given, dict):
        given = {}
    try:
        line = _line(given, segments)
    except TokendError as exc:
        line = f"tokend: {exc.message}"
    except OSError as exc:  # the runtime folder or the socket misbehaves: say so, briefly
        line = f"tokend: {exc.strerror or exc}"
    out.write(line + "\n")
    return 0


def _segments_wanted(argv: Sequence[str]) -> tuple[str, ...]:
    args = list(argv)
    if not args:
        return SEGMENTS
    if args[0].startswith("--segments="):
        args = ["--segments", args[0].split("=", 1)[1], *args[1:]]
    if len(args) != 2 or args[0] != "--segments":
        raise ValueError(f"unknown arguments {' '.join(args)!r}: see `tokend statusline --help`")
    return parse_segments(args[1])


def _line(given: dict[str, Any], segments: Sequence[str] = SEGMENTS) -> str:
    transcript = given.get("transcript_path")
    if not isinstance(transcript, str) or not os.path.isfile(transcript):
        return "tokend: no transcript to follow (run as Claude Code's statusLine command)"
    path = os.path.realpath(transcript)
    client = LiveClient.connect(client_name="tokend statusline")
    if client is None:
        _start_in_background(path, given)
        return known_line(given)
    with client:
        try:
            follower = client.request(
                "follow/start",
                {"agent": "claude-code", "path": path},
                timeout=FIRST_ANSWER_SECONDS,
            )
        except NoReply:  # a first read of a long transcript: the daemon goes on with it
            return known_line(given)
        transcripts = follower["transcripts"]
        if transcripts and not transcripts[0].get("caughtUp", True):
            return known_line(given)  # the daemon's figures are partial until it has read on
        sessions = [t["sessionId"] for t in transcripts if t["sessionId"]]
        if not sessions:
            return known_line(given, fallback="tokend: waiting for the first reply")
        snapshot = client.request("budget/snapshot", {"sessionId": sessions[0]})
    line = render(snapshot, given, segments, colour=not os.environ.get("NO_COLOR"))
    _remember(given, line)
    return line


def known_line(given: dict[str, Any], fallback: str = "tokend: starting") -> str:
    """The line from what Claude Code passed on stdin (its own figures, marked as such), else
    the last line tokend printed for the session, else `fallback`."""
    window = given.get("context_window")
    model = given.get("model")
    cost = given.get("cost")
    if isinstance(window, dict) and isinstance(window.get("context_window_size"), int):
        size = window["context_window_size"]
        usage = window.get("current_usage")
        used = 0
        if isinstance(usage, dict):
            used = sum(
                v
                for k, v in usage.items()
                if k != "output_tokens" and isinstance(v, int) and not isinstance(v, bool)
            )
        pct = window.get("used_percentage")
        if not isinstance(pct, int | float):
            pct = 100.0 * used / size if size else 0.0
        name = model.get("id") if isinstance(model, dict) else None
        parts = [str(name or "?"), f"{short_tokens(used)}/{short_tokens(size)} · {pct:.0f}%"]
        if isinstance(cost, dict) and isinstance(cost.get("total_cost_usd"), int | float):
            parts.append(f"${cost['total_cost_usd']:.2f}")
        return " · ".join(parts) + " · tokend starting"
    remembered = _remembered(given)
    return remembered if remembered is not None else fallback


def _cache_file(given: dict[str, Any], suffix: str = "") -> str | None:
    """<runtime folder>/statusline/<session id><suffix>, None without a plain session id."""
    session_id = given.get("session_id")
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        return None
    return os.path.join(rendezvous.runtime_location(), "statusline", session_id + suffix)


def _remember(given: dict[str, Any], line: str) -> None:
    """Keep the line for the next cold start (a private folder; a failure is not an error)."""
    target = _cache_file(given)
    if target is None:
        return
    try:
        _private_folder(os.path.dirname(target))
        temporary = f"{target}.{os.getpid()}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(line)
        os.replace(temporary, target)
    except OSError:
        pass


def _remembered(given: dict[str, Any]) -> str | None:
    target = _cache_file(given)
    if target is None:
        return None
    try:
        rendezvous.check_private_folder(os.path.dirname(target))
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as file:
            return file.read(1000).strip() or None
    except (OSError, rendezvous.UnsafePathError, UnicodeDecodeError):
        return None


def _private_folder(path: str) -> None:
    """Create `path` (and the runtime folder) 0700 if absent, then check it is private."""
    for folder in (os.path.dirname(path), path):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        rendezvous.check_private_folder(folder)


def _start_in_background(path: str, given: dict[str, Any]) -> None:
    """`tokend follow claude-code PATH --detach`, detached: it starts the daemon and the
    follower; the next refresh finds them. Not twice within START_AGAIN_SECONDS."""
    import subprocess
    import sys
    import time

    marker = _cache_file(given, ".starting")
    if marker is not None:
        try:
            _private_folder(os.path.dirname(marker))
            if time.time() - os.lstat(marker).st_mtime < START_AGAIN_SECONDS:
                return
        except FileNotFoundError:
            pass
        except (OSError, rendezvous.UnsafePathError):
            marker = None
    if marker is not None:
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            os.close(fd)
        except OSError:
            pass
    subprocess.Popen(
        [sys.executable, "-m", "tokend", "follow", "claude-code", path, "--detach"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
