"""session/rewind "both" is all or nothing when the conversation part is refused after the files
were written (an append raced in between): the files go back to what the agent left. Real
service on a real SQLite file, real folder and watcher; the oracle is the bytes on disk.

On main the handler wrote the files and only then asked for the conversation part: refused
(VersionConflict), it left the files restored and the conversation as it was."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tests.checkpoints.conftest import Agent
from tokend.core.errors import VersionConflict
from tokend.core.types import TextPart
from tokend.service.checkpoints.views import rewind_both


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "build" not in p.relative_to(root).parts
    }


async def test_a_refused_conversation_part_puts_the_files_back(agent: Agent) -> None:
    root = agent.root
    first = agent.user("rename the helper")

    def edit() -> None:
        (root / "src" / "util.py").write_text("def helper2(x):\n    return x * 2\n")
        (root / "notes.md").unlink()

    agent.tool("Edit", edit, "src/util.py", "notes.md")
    agent.reply("renamed")
    left_by_agent = _files(root)
    version = agent.service.sessions.state(agent.sid).data.version

    hold, running = threading.Event(), threading.Event()

    def blocker() -> None:  # keeps the checkpoint thread busy until the append is in
        running.set()
        hold.wait(30)

    agent.checkpoints.submit(blocker)
    running.wait(30)
    rewinding = rewind_both(agent.checkpoints, agent.sid, first, version, force=False)
    task = asyncio.ensure_future(rewinding)
    await asyncio.sleep(0.2)  # checked, its restore queued behind the blocker
    await agent.service.appends.append(agent.sid, "user", [TextPart("one more thing")])  # the race
    hold.set()
    with pytest.raises(VersionConflict):
        await task
    assert _files(root) == left_by_agent
    journal = agent.checkpoints.store.journal.restores("undone", agent.sid)
    assert len(journal) == 1 and not agent.checkpoints.store.journal.restores("running", agent.sid)
