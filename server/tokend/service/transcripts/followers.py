"""The daemon's followers: agent transcripts it tails into sessions as the agents write them.

A follower follows either one transcript file, or an agent's whole sessions folder: then every
transcript that appears or grows there after the follower started (and the newest one already
there) is followed too, each into its own session, so a new agent session is picked up without
a command. The watch the app hands in (service.ports.WatchFactory: adapters.watch) reports changes, polling the folder
when inotify cannot watch it; a slow poll of each tail catches what it misses (network file
systems). What the agent wrote is imported at once, a reply still streaming included (see
core/transcripts/tail.py).

Each transcript has one TranscriptTail however many followers name it, and one task syncing it,
so two editors asking to follow the same file never import a record twice. Everything here runs
on the event loop, except the watch's callbacks, which only hand the path over to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokend.core.errors import InvalidParams
from tokend.service.ports import PathWatch, WatchFactory
from tokend.service.transcripts.files import agent_folder, is_transcript, latest_transcript
from tokend.service.transcripts.ports import TranscriptService
from tokend.service.transcripts.tail import AGENTS, Agent, TailStatus, TranscriptTail

log = logging.getLogger(__name__)

__all__ = ["Followers", "FollowerStatus", "agent_folder", "is_transcript", "latest_transcript"]

POLL_SECONDS = 1.0  # how often a tail looks at its file without a watchdog event
KEEPS_DAEMON_UP_SECONDS = 3600.0  # a transcript written this recently keeps its daemon up
FIRST_SYNC_SECONDS = 30.0  # follow/start waits this long at most for a transcript's first import
LAST_RECORDS = 500  # newest_records looks this far back


@dataclass(frozen=True)
class FollowerStatus:
    """A follower as follow/list shows it: what it follows and how far each transcript is."""

    follower_id: str
    agent: Agent
    path: str  # the transcript, or the folder watched
    folder: bool
    transcripts: tuple[TailStatus, ...]


SessionKnown = Callable[[str, TailStatus], bool]
"""Called (follower id, transcript) when a transcript's session is created or found; returns
False once whoever listened is gone (its connection closed), and is then forgotten."""


@dataclass(eq=False)
class _Follower:
    follower_id: str
    agent: Agent
    path: Path
    folder: bool
    workspace_uri: str | None
    tails: list[_Running] = field(default_factory=list)
    listeners: list[SessionKnown] = field(default_factory=list)
    watch: PathWatch | None = None  # the watch of its folder


@dataclass(eq=False)
class _Running:
    """A tail and its task; shared by the followers that name its file."""

    tail: TranscriptTail
    task: asyncio.Task[None] | None = None
    poked: asyncio.Event = field(default_factory=asyncio.Event)
    followers: list[_Follower] = field(default_factory=list)
    announced: str | None = None  # the session id the followers were last told of
    synced: asyncio.Event = field(default_factory=asyncio.Event)  # set after the first sync


class Followers:
    """The followers of one service (one daemon; the app builds them)."""

    def __init__(
        self,
        service: TranscriptService,
        *,
        watch: WatchFactory,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.service = service
        self._watch_factory = watch  # production: adapters.watch.PathWatch, from the app
        self.poll_seconds = poll_seconds
        self._followers: dict[str, _Follower] = {}
        self._running: dict[Path, _Running] = {}
        self._ids = itertools.count(1)
        self._ended: list[PathWatch] = []  # the watches of stopped followers, to join

    # -- requests -----------------------------------------------------------------------------

    async def start(
        self,
        agent: str,
        path: str | None = None,
        workspace_uri: str | None = None,
        on_session: SessionKnown | None = None,
        wait: float = FIRST_SYNC_SECONDS,
    ) -> FollowerStatus:
        """Follow `path` (a transcript), or with no path the agent's sessions folder, and return
        once what the transcript holds is imported (at most `wait` seconds: the import goes
        on after; the status's `caught_up` says whether it was). A file already followed is
        not followed twice: its follower is returned."""
        if agent not in AGENTS:
            raise InvalidParams(f"agent must be one of {', '.join(AGENTS)}, not {agent!r}")
        kind: Agent = "codex" if agent == "codex" else "claude-code"
        target = Path(path).expanduser() if path else agent_folder(kind)
        if not target.is_absolute():
            raise InvalidParams(f"path must be absolute, not {path!r}")
        if path and not target.is_file():
            raise InvalidParams(f"path: no transcript at {target}")
        if not path and not target.is_dir():
            raise InvalidParams(
                f"no {agent} sessions folder at {target}: run {agent} once, or pass a path"
            )
        target = target.resolve()
        for follower in self._followers.values():
            if follower.agent == kind and follower.path == target:
                if on_session is not None:
                    follower.listeners.append(on_session)
                    for running in follower.tails:
                        self._tell(follower, running, force=True)
                return self._status(follower)
        follower = _Follower(f"f{next(self._ids)}", kind, target, not path, workspace_uri)
        if on_session is not None:
            follower.listeners.append(on_session)
        self._followers[follower.follower_id] = follower
        follower.watch = self._watch(follower, target if follower.folder else target.parent)
        first = latest_transcript(kind, target) if follower.folder else target
        if first is not None:
            running = self._add(follower, first)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(running.synced.wait(), wait)
        return self._status(follower)

    def newest_records(self, path: str) -> Iterator[Mapping[str, Any]]:
        """The records read from the followed transcript at `path` (resolved), newest first
        (none when it is not followed)."""
        running = self._running.get(Path(path).resolve())
        records: Sequence[Mapping[str, Any]] = running.tail.records if running else ()
        return iter(records[-LAST_RECORDS:][::-1])

    def list(self) -> list[FollowerStatus]:
        return [self._status(f) for f in self._followers.values()]

    def compaction_refused(self, session_id: str) -> str | None:
        """Why tokend must not compact `session_id` while it follows the agent's transcript
        into it (None when it follows none): the agent sends its own context, so a compaction
        here would change the gauge and nothing the model is sent."""
        for path, running in list(self._running.items()):
            if running.tail.session_id != session_id:
                continue
            agent = running.tail.agent
            own = "/compact" if agent == "claude-code" else "its own compaction"
            return (
                f"session {session_id} follows {agent}'s transcript {path}: its context is the "
                f"agent's ({agent} compacts it with {own}), and a compaction by tokend would "
                f"change the gauge, not what the model is sent. `tokend fork {session_id}` "
                "makes a copy tokend owns and may compact."
            )
        return None

    def keep_daemon_up(self) -> bool:
        """Whether the daemon must stay up with no connection: it follows a transcript the
        agent wrote in the last KEEPS_DAEMON_UP_SECONDS (a status line that asks for it a
        minute later must not find it gone, nor the follower stopped)."""
        return self.written_within(KEEPS_DAEMON_UP_SECONDS)

    def written_within(self, seconds: float) -> bool:
        """Whether a followed transcript was written in the last `seconds`: the agent is at
        work, and the daemon that follows it stays up (its idle exit waits)."""
        now = time.time()
        for path in list(self._running):
            try:
                if now - path.stat().st_mtime < seconds:
                    return True
            except OSError:
                continue
        return False

    def stop(self, follower_id: str) -> FollowerStatus:
        follower = self._followers.pop(follower_id, None)
        if follower is None:
            raise InvalidParams(f"no follower {follower_id!r}: follow/list lists them")
        if follower.watch is not None:
            follower.watch.stop()  # its threads end soon: close() joins those still running
            self._ended = [w for w in self._ended if any(t.is_alive() for t in w.threads())]
            self._ended.append(follower.watch)
        for running in follower.tails:
            running.followers.remove(follower)
            if not running.followers and running.task is not None:
                running.task.cancel()
                self._running.pop(running.tail.path, None)
        return self._status(follower)

    def close(self, seconds: float = 2.0) -> None:
        """Stop every follower (their tasks are cancelled) and its watch, waiting up to
        `seconds` in all for the watches' threads."""
        for follower_id in list(self._followers):
            self.stop(follower_id)
        deadline = time.monotonic() + seconds
        for thread in [t for watch in self._ended for t in watch.threads()]:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._ended.clear()

    # -- internals ----------------------------------------------------------------------------

    def _watch(self, follower: _Follower, folder: Path) -> PathWatch:
        """The folder watched (the whole tree for a sessions folder), polled where inotify
        cannot watch; each transcript written there is handed to `changed` on the loop."""
        loop = asyncio.get_running_loop()

        def written(path: Path) -> None:  # the watch's thread: hand the path over, no more
            if path.suffix == ".jsonl" and path.is_file():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(self.changed, follower, path)

        def notice(text: str) -> None:
            log.warning("following %s: %s", follower.path, text)

        watch = self._watch_factory(folder, written, notice, recursive=follower.folder)
        watch.start()
        return watch

    def _status(self, follower: _Follower) -> FollowerStatus:
        return FollowerStatus(
            follower.follower_id,
            follower.agent,
            str(follower.path),
            follower.folder,
            tuple(r.tail.status() for r in follower.tails),
        )

    def changed(self, follower: _Follower, path: Path) -> None:
        """A file in the follower's folder was created or written (on the event loop)."""
        if follower.follower_id not in self._followers:
            return
        if follower.folder:
            if not is_transcript(follower.agent, follower.path, path):
                return
        elif path != follower.path:
            return
        running = self._running.get(path)
        if running is None or follower not in running.followers:
            running = self._add(follower, path)
        running.poked.set()

    def _add(self, follower: _Follower, path: Path) -> _Running:
        running = self._running.get(path)
        if running is None:
            tail = TranscriptTail(self.service, follower.agent, path, follower.workspace_uri)
            running = self._running[path] = _Running(tail)
            running.task = asyncio.get_running_loop().create_task(self._run(running))
        running.followers.append(follower)
        follower.tails.append(running)
        running.poked.set()
        return running

    async def _run(self, running: _Running) -> None:
        """Sync the tail when poked or polled while a follower names it (a stop landing in a
        commit is dropped there, service.session.turns.committed: the loop itself must end)."""
        while running.followers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(running.poked.wait(), self.poll_seconds)
            running.poked.clear()
            tail = running.tail
            try:
                await tail.sync()
            except Exception:  # a bug must not end the follower silently
                log.exception("following %s failed", tail.path)
            tail.caught_up = True
            running.synced.set()
            for follower in running.followers:
                self._tell(follower, running)

    def _tell(self, follower: _Follower, running: _Running, force: bool = False) -> None:
        session_id = running.tail.session_id
        if session_id is None or (session_id == running.announced and not force):
            return
        running.announced = session_id
        for listener in list(follower.listeners):
            try:
                keep = listener(follower.follower_id, running.tail.status())
            except Exception:
                log.exception("a follower's listener failed")
                keep = False
            if not keep:
                follower.listeners.remove(listener)
