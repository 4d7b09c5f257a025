"""Checkpoints on a real folder with real watchdog events: turns that edit through a tool call
and through a shell (writes, deletes, moves), then a rewind of the code. The oracle is the
bytes on disk the test itself read before each turn."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.checkpoints.conftest import Agent
from tokend.service.checkpoints import views as checkpoint_views
from tokend.service.checkpoints.views import list_turns, restore, turn_diff


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` but the ignored build/ folder, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "build" not in p.relative_to(root).parts
    }


def two_turns(agent: Agent) -> tuple[str, str, dict[str, bytes]]:
    root = agent.root
    first = agent.user("make main return 2")
    original = tree(root)
    agent.tool(
        "Edit",
        lambda: (root / "src" / "app.py").write_text("def main():\n    return 2\n"),
        "src/app.py",
    )
    agent.reply("main returns 2")
    second = agent.user("tidy up: drop util, move notes, add a config")

    def shell() -> None:
        (root / "src" / "util.py").unlink()
        (root / "docs").mkdir()
        shutil.move(root / "notes.md", root / "docs" / "notes.md")
        (root / "config.toml").write_bytes(b"[app]\nport = 8080\n")
        (root / "logo.bin").write_bytes(b"\x00" * 64)

    agent.tool("Bash", shell, "src/util.py", "notes.md", "docs/notes.md", "config.toml", "logo.bin")
    agent.reply("done")
    return first, second, original


def test_a_rewind_restores_bytes_brings_deleted_files_back_and_undoes_moves(agent: Agent):
    first, _, original = two_turns(agent)

    turns = agent.call(lambda: list_turns(agent.checkpoints, agent.sid))
    assert [t.message_id for t in turns] == [first, turns[1].message_id]
    assert [(f.path, f.kind, f.added, f.removed) for f in turns[0].files] == [
        ("src/app.py", "modified", 1, 1)
    ]
    kinds = {f.path: f.kind for f in turns[1].files}
    assert kinds == {
        "config.toml": "created",
        "docs/notes.md": "moved",
        "logo.bin": "modified",
        "notes.md": "deleted",
        "src/util.py": "deleted",
    }
    moved = [f for f in turns[1].files if f.path == "docs/notes.md"][0]
    assert moved.moved_from == "notes.md"

    diff = agent.call(lambda: turn_diff(agent.checkpoints, agent.sid, first, None))
    assert diff == (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def main():\n"
        "-    return 1\n+    return 2\n"
    )

    dry = agent.call(lambda: restore(agent.checkpoints, agent.sid, first, True, False))
    assert tree(agent.root) != original  # the dry run wrote nothing
    planned = {s.path: s.action for s in dry.steps}
    assert planned == {
        "src/app.py": "write",
        "src/util.py": "create",
        "notes.md": "create",
        "docs/notes.md": "delete",
        "config.toml": "delete",
        "logo.bin": "write",
    }

    done = agent.call(lambda: restore(agent.checkpoints, agent.sid, first, False, False))
    assert {s.path: s.action for s in done.steps} == planned
    assert tree(agent.root) == original
    assert not (agent.root / "docs").exists()
    back = [s for s in done.steps if s.path == "notes.md"][0]
    assert back.moved_back_from == "docs/notes.md"


def test_a_user_edit_between_turns_is_reported_not_clobbered_until_forced(agent: Agent):
    first, second, original = two_turns(agent)
    seq = agent.last_seq()
    mine = b"def main():\n    return 2  # I checked this by hand\n"
    (agent.root / "src" / "app.py").write_bytes(mine)  # the user, after the agent's turn
    agent.wait_logged(seq, "src/app.py")

    turns = agent.call(lambda: list_turns(agent.checkpoints, agent.sid))
    assert [(f.path, f.origin) for f in turns[1].outside] == [("src/app.py", "outside")]

    dry = agent.call(lambda: restore(agent.checkpoints, agent.sid, first, True, False))
    kept = {s.path: s.reason for s in dry.steps if s.action == "kept"}
    assert kept == {"src/app.py": "changed since the agent's turn (outside a turn)"}

    done = agent.call(lambda: restore(agent.checkpoints, agent.sid, first, False, False))
    assert (agent.root / "src" / "app.py").read_bytes() == mine  # not clobbered
    assert (agent.root / "src" / "util.py").read_bytes() == original["src/util.py"]
    assert [s.path for s in done.steps if s.action == "kept"] == ["src/app.py"]

    forced = agent.call(lambda: restore(agent.checkpoints, agent.sid, first, False, True))
    assert [s.path for s in forced.steps] == ["src/app.py"]
    assert tree(agent.root) == original


def test_rewinding_to_the_second_turn_keeps_the_first_turns_edit(agent: Agent):
    first, second, original = two_turns(agent)
    done = agent.call(lambda: restore(agent.checkpoints, agent.sid, second, False, False))
    after = tree(agent.root)
    assert after["src/app.py"] == b"def main():\n    return 2\n"
    assert {k: v for k, v in after.items() if k != "src/app.py"} == {
        k: v for k, v in original.items() if k != "src/app.py"
    }
    assert "src/app.py" not in {s.path for s in done.steps}


def test_a_save_reads_only_the_saved_file_not_its_folder(agent: Agent):
    """watchdog names a saved file's folder beside it: the checkpointer takes the folder's
    new and deleted files from it, and does not read every file under it again (the root's
    folder: the whole tree, 78,000 files on the kernel, on each save of a top-level file)."""
    root = agent.root
    agent.user("edit the top-level notes and the app")
    read: list[str] = []
    capture = agent.checkpoints.capture

    def counting(root_: Path, rel: str, *args: object, **kwargs: object) -> object:
        read.append(rel)
        return capture(root_, rel, *args, **kwargs)  # type: ignore[arg-type]

    agent.checkpoints.capture = counting  # type: ignore[method-assign]
    agent.tool("Edit", lambda: (root / "notes.md").write_text("# Notes\n\nchanged\n"), "notes.md")
    agent.tool("Edit", lambda: (root / "src" / "app.py").write_text("x = 3\n"), "src/app.py")
    assert sorted(set(read)) == ["notes.md", "src/app.py"]


def test_a_rewind_cancelled_while_its_files_are_written_finishes_code_and_conversation(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
):
    """Found: a cancel reaching session/rewind {restore: "both"} while the checkpoints' thread
    wrote the files answered RequestCancelled with the files restored and the conversation
    not rewound. Once the files are being written, the rewind runs to its end and answers."""
    first, _, original = two_turns(agent)
    entered, release = threading.Event(), threading.Event()
    real_restore = checkpoint_views.restore

    def held_restore(*args: Any, **kwargs: Any) -> Any:  # held until the cancel was sent
        entered.set()
        release.wait(10)
        return real_restore(*args, **kwargs)

    monkeypatch.setattr(checkpoint_views, "restore", held_restore)

    async def scenario() -> Any:
        task = asyncio.ensure_future(
            checkpoint_views.rewind_both(agent.checkpoints, agent.sid, first, None, False)
        )
        while not entered.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        release.set()
        return await task

    restored, rewound = asyncio.run(scenario())
    assert tree(agent.root) == original
    assert rewound.removed > 0
    assert agent.service.sessions.state(agent.sid).data.messages[-1].id == first
    assert {s.path for s in restored.steps} >= {"src/app.py", "config.toml"}


def test_a_checkpoint_restore_cancelled_while_its_files_are_written_answers_its_result(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
):
    """checkpoint/restore (and a "code" rewind) goes through restore_code: cancelled once its
    thread writes the files, it finishes and returns what it restored."""
    first, _, original = two_turns(agent)
    entered, release = threading.Event(), threading.Event()
    real_restore = checkpoint_views.restore

    def held_restore(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(10)
        return real_restore(*args, **kwargs)

    monkeypatch.setattr(checkpoint_views, "restore", held_restore)

    async def scenario() -> Any:
        task = asyncio.ensure_future(
            checkpoint_views.restore_code(agent.checkpoints, agent.sid, first, False, False)
        )
        while not entered.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        release.set()
        return await task

    restored = asyncio.run(scenario())
    assert tree(agent.root) == original
    assert {s.path for s in restored.steps} >= {"src/app.py", "config.toml"}
