"""The checkpoint store's turn marks: when each session message was appended
(core.checkpoints.turns.TurnMark), kept in the index's `marks` table."""

from __future__ import annotations

from tokend.adapters.checkpoint_schema import IndexTables
from tokend.core.checkpoints.turns import TurnMark


class CheckpointMarks(IndexTables):
    """Each session's marks, through the store's write transactions and reads."""

    def add(self, session_id: str, workspace: str, mark: TurnMark) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO marks VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    mark.message_id,
                    workspace,
                    mark.at,
                    int(mark.starts_turn),
                    int(mark.open_calls),
                ),
            )

    def session(self, session_id: str) -> tuple[str | None, list[TurnMark]]:
        """The session's workspace and its marks in append order."""
        rows = self._rows(
            "SELECT workspace, message_id, at, starts_turn, open_calls FROM marks"
            " WHERE session_id = ? ORDER BY at, rowid",
            (session_id,),
        )
        workspace = rows[0][0] if rows else None
        return workspace, [TurnMark(m, at, bool(s), bool(o)) for _, m, at, s, o in rows]
