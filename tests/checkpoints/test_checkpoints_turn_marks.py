"""Which messages start and end the turns a restore goes by (the checkpointer's marks).

A compaction's summary is neither the user's message nor the agent's work: it ends no turn, so a
file the user edits after the agent's turn stays the user's (`outside`) when the session is
compacted afterwards (Claude Code's rewind and Codex's undo go by the user's prompts too; a
compaction makes no checkpoint). Messages another daemon appended are marked every one, so the
user message that opened the turn is there to start it (marks are stored once per message)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.appending import append
from tests.checkpoints.conftest import Agent, wait_for
from tokend.core.checkpoints.turns import turns_of
from tokend.core.types import TextPart
from tokend.service.app import open_service
from tokend.service.checkpoints.views import list_turns, restore


def test_a_compaction_after_the_turn_leaves_the_users_later_edit_outside(agent: Agent):
    first = agent.user("make main return 2")
    agent.tool(
        "Edit",
        lambda: (agent.root / "src" / "app.py").write_text("def main():\n    return 2\n"),
        "src/app.py",
    )
    agent.reply("main returns 2")
    seq = agent.last_seq()
    mine = b"# Notes\n\nchecked by hand\n"
    (agent.root / "notes.md").write_bytes(mine)  # the user, after the agent's turn
    agent.wait_logged(seq, "notes.md")

    agent.service.changes.append_boundary(agent.sid, "We made main return 2.")  # /compact
    turns = agent.call(lambda: list_turns(agent.checkpoints, agent.sid))

    assert [t.message_id for t in turns] == [first]
    assert [f.path for f in turns[0].files] == ["src/app.py"]
    assert [(f.path, f.origin) for f in turns[0].outside] == [("notes.md", "outside")]
    done = agent.call(lambda: restore(agent.checkpoints, agent.sid, first, False, False))
    assert (agent.root / "notes.md").read_bytes() == mine  # the user's edit is not reverted
    assert "src/app.py" in {s.path for s in done.steps if s.action != "kept"}


def test_every_message_another_daemon_appended_is_marked(agent: Agent, tmp_path: Path):
    here = agent.service
    here.sessions.state(agent.sid)  # loaded here (a snapshot asked), no message appended yet
    other = open_service(None, f"sqlite:///{tmp_path}/tokend.sqlite3")  # another daemon
    try:
        asked, _ = append(other, agent.sid, "user", [TextPart("fix the bug")])
        answered, _ = append(other, agent.sid, "assistant", [TextPart("fixed")])
        version = other.sessions.state(agent.sid).data.version
    finally:
        other.close()

    asyncio.run(here.remote.remote_changed(agent.sid, version))  # its change reaches this one

    def marked() -> list[str]:
        return [m.message_id for m in agent.checkpoints.store.marks.session(agent.sid)[1]]

    wait_for("both messages marked", lambda: answered.id in marked())
    assert marked()[-2:] == [asked.id, answered.id]
    turns = turns_of(agent.checkpoints.store.marks.session(agent.sid)[1])
    assert turns[-1].message_id == asked.id  # the other daemon's turn starts at its prompt
    assert turns[-1].message_ids == (asked.id, answered.id)
