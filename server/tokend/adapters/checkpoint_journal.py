"""The checkpoint store's restore journal (the index's `restores` table): each restore written
before its first write and closed after its last, so a restart finds one killed midway."""

from __future__ import annotations

import os
import time
from typing import Any

from tokend.adapters.checkpoint_schema import IndexTables
from tokend.core.workspace.files import JournaledRestore


class CheckpointJournal(IndexTables):
    """The journaled restores, through the store's write transactions and reads."""

    def begin_restore(
        self,
        workspace: str,
        session_id: str,
        to_message_id: str,
        plan: str,
        conversation: str | None,
    ) -> int:
        """Journal a restore before its first write (`plan` and `conversation`: the caller's
        JSON); its id."""
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO restores (workspace, session_id, to_message_id, started_at, plan,"
                " conversation, state, pid) VALUES (?, ?, ?, ?, ?, ?, 'running', ?)",
                (
                    workspace,
                    session_id,
                    to_message_id,
                    time.time(),
                    plan,
                    conversation,
                    os.getpid(),
                ),
            )
            return cur.lastrowid or 0

    def end_restore(self, journal_id: int, state: str = "done", outcome: str | None = None) -> None:
        """Close a journaled restore: "done" (it finished), or "interrupted" (a restart found it
        unfinished and settled it: `outcome` says how)."""
        with self._tx() as db:
            db.execute(
                "UPDATE restores SET state = ?, outcome = ? WHERE id = ?",
                (state, outcome, journal_id),
            )

    def restores(self, state: str, session_id: str | None = None) -> list[JournaledRestore]:
        """The journaled restores in `state` (of one session, when given), oldest first."""
        sql = (
            "SELECT id, workspace, session_id, to_message_id, started_at, plan, conversation,"
            " state, outcome, pid FROM restores WHERE state = ?"
        )
        args: tuple[Any, ...] = (state,)
        if session_id is not None:
            sql, args = sql + " AND session_id = ?", (state, session_id)
        return [JournaledRestore(*row) for row in self._rows(sql + " ORDER BY id", args)]
