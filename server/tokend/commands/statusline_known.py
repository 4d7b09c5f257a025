"""`tokend statusline` without the daemon's answer: the line made from what is known (Claude
Code's own figures, else the last line printed for the session, kept in the runtime folder),
the daemon and follower started in the background, and the older daemons' way (commands/
statusline.py says when each is used)."""

from __future__ import annotations

import os

from tokend.adapters import rendezvous

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Segments = tuple[str, ...] | None  # the segments a line shows (None: all, in their order)

KEPT_CHARS = 64 << 10  # what is read of a kept line's file
START_AGAIN_SECONDS = 30.0  # a background start younger than this is not started twice
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def known_line(
    given: dict[str, Any], fallback: str = "tokend: starting", segments: Segments = None
) -> str:
    """The line from what Claude Code passed on stdin (its own figures, marked as such), else
    the last line tokend printed for the session with these `segments`, else `fallback`."""
    from tokend.core.statusline.segments import short_tokens

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
    remembered = remembered_line(given, segments)
    return remembered if remembered is not None else fallback


def _cache_file(given: dict[str, Any], suffix: str = "", segments: Segments = None) -> str | None:
    """<runtime folder>/statusline/<session id>[.<segment>-<segment>...]<suffix>, None without
    a plain session id: a line is kept for the segments it shows (None: all, in their order),
    so a line of other segments is never shown for it."""
    session_id = given.get("session_id")
    if not isinstance(session_id, str) or not _plain_id(session_id):
        return None
    chosen = "" if segments is None else "." + "-".join(segments)  # checked names: letters
    return os.path.join(rendezvous.runtime_location(), "statusline", session_id + chosen + suffix)


def _plain_id(value: object) -> bool:
    """Letters, digits, `_` and `-`, 1 to 128 of them, not starting with `_` or `-`."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and value[0] not in "_-"
        and _ID_CHARS.issuperset(value)
    )


def remember(given: dict[str, Any], line: str, segments: Segments = None) -> None:
    """Keep the line of these `segments` for the next cold start (keep_text)."""
    target = _cache_file(given, segments=segments)
    if target is not None:
        keep_text(target, line)


def remembered_line(given: dict[str, Any], segments: Segments = None) -> str | None:
    target = _cache_file(given, segments=segments)
    if target is None:
        return None
    return (kept_text(target) or "").strip() or None


def keep_text(target: str, text: str) -> None:
    """Write `text` to `target` in a private folder of the runtime folder (both created 0700
    when absent), replacing it at once; not written again when it holds `text` already. A
    failure is not an error: what is kept only saves time."""
    if kept_text(target) == text:
        return
    try:
        _private_folder(os.path.dirname(target))
        temporary = f"{target}.{os.getpid()}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except OSError:
        pass


def kept_text(target: str) -> str | None:
    """What keep_text kept at `target` (its first 64 KB), None when nothing is kept there or
    its folder is not private to us."""
    try:
        rendezvous.check_private_folder(os.path.dirname(target))
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as file:
            return file.read(KEPT_CHARS)
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


def start_in_background(
    path: str | None, given: dict[str, Any], agent: str = "claude-code"
) -> None:
    """`tokend follow AGENT [PATH] --detach`, detached: it starts the daemon and the follower
    (of the agent's sessions folder without PATH); the next refresh finds them. Not twice
    within START_AGAIN_SECONDS."""
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
        [sys.executable, "-m", "tokend", "follow", agent, *([path] if path else []), "--detach"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def line_by_snapshot(given: dict[str, Any], segments: tuple[str, ...] | None) -> str:
    """A daemon older than statusline/line: follow/start, then budget/snapshot, rendered here."""
    from tokend.commands.live import LiveClient
    from tokend.commands.rpc_client import NoReply
    from tokend.commands.statusline_segments import SEGMENTS, render

    client = LiveClient.connect(client_name="tokend statusline")
    if client is None:
        return known_line(given, segments=segments)
    path = os.path.realpath(given["transcript_path"])
    with client:
        try:
            follower = client.request(
                "follow/start", {"agent": "claude-code", "path": path}, timeout=0.1
            )
        except NoReply:
            return known_line(given, segments=segments)
        transcripts = follower["transcripts"]
        if transcripts and not transcripts[0].get("caughtUp", True):
            return known_line(given, segments=segments)
        sessions = [t["sessionId"] for t in transcripts if t["sessionId"]]
        if not sessions:
            return known_line(given, "tokend: waiting for the first reply", segments)
        snapshot = client.request("budget/snapshot", {"sessionId": sessions[0]})
    line = render(snapshot, given, segments or SEGMENTS, colour=not os.environ.get("NO_COLOR"))
    remember(given, line, segments)
    return line
