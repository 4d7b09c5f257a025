"""The followers reach the file watcher only through the seam the app hands in
(service.ports.WatchFactory): with a fake watch and no poll to speak of, a transcript's new
records are imported when, and only when, the watch reports the file written."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

from tests.conftest import session_file
from tokend.service.app import open_service
from tokend.service.transcripts.followers import Followers

WAIT_SECONDS = 30.0  # how long an import may take on a loaded machine (not a figure)


class FakeWatch:
    """A watch that reports what the test says was written, from a thread of its own."""

    def __init__(
        self,
        root: Path,
        on_path: Callable[[Path], None],
        on_notice: Callable[[str], None],
        *,
        recursive: bool = True,
    ) -> None:
        self.root, self.recursive, self._on_path = root, recursive, on_path
        self.started = self.stopped = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def threads(self) -> list[threading.Thread]:
        return self._threads

    def written(self, path: Path) -> None:
        thread = threading.Thread(target=self._on_path, args=(path,))
        self._threads.append(thread)
        thread.start()


def test_a_followed_transcript_grows_in_its_session_when_the_watch_reports_it(
    tmp_path: Path,
) -> None:
    lines = session_file("short.jsonl").read_text().splitlines(keepends=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(lines[: len(lines) // 2]))
    service = open_service(None, f"sqlite:///{tmp_path}/s.sqlite3")
    watches: list[FakeWatch] = []

    def watch(*args: object, **options: object) -> FakeWatch:
        watches.append(FakeWatch(*args, **options))  # type: ignore[arg-type]
        return watches[-1]

    async def follow() -> tuple[int, int, int]:
        followers = Followers(service, watch=watch, poll_seconds=3600)
        try:
            status = await followers.start("claude-code", str(transcript))
            sid = status.transcripts[0].session_id
            assert sid is not None and status.transcripts[0].caught_up
            first = len(service.store.messages.load_all_messages(sid))
            with transcript.open("a") as out:
                out.write("".join(lines[len(lines) // 2 :]))
            await asyncio.sleep(0.5)
            unreported = len(service.store.messages.load_all_messages(sid))
            watches[0].written(transcript.resolve())
            deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
            while len(service.store.messages.load_all_messages(sid)) == unreported:
                assert asyncio.get_running_loop().time() < deadline, "never imported"
                await asyncio.sleep(0.05)
            return first, unreported, len(service.store.messages.load_all_messages(sid))
        finally:
            followers.close()

    try:
        first, unreported, reported = asyncio.run(follow())
    finally:
        service.close()
    (only,) = watches
    assert only.root == transcript.parent.resolve() and not only.recursive  # one file's folder
    assert only.started and only.stopped
    assert first == unreported  # nothing read until the watch reported the file written
    assert reported > unreported
