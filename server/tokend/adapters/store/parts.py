"""Marks kept on a store's parts outside a session change (core.ports.SessionParts): the time a
part was first pruned, and the token count cached on a part, each in one write transaction of
the store's. The parts themselves are never deleted nor rewritten."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from sqlalchemy import bindparam, update

from tokend.adapters.store import rows
from tokend.adapters.store.models import PartRow, table_of
from tokend.adapters.store.rows import Transaction


class SqlParts:
    """core.ports.SessionParts on a store's write transactions."""

    def __init__(self, writing: Transaction) -> None:
        self._writing = writing

    def mark_parts_compacted(self, part_ids: Iterable[str], at: datetime) -> None:
        """Set compacted_at on parts not marked yet (the first prune time stays); the parts
        themselves are kept. Unknown ids are ignored."""
        ids = list(dict.fromkeys(part_ids))
        if not ids:
            return
        with self._writing() as session:
            rows.mark_parts(session, ids, at)

    def set_part_tokens(self, counts: Mapping[str, int]) -> None:
        """Cache token counts on parts (part id -> tokens). Unknown ids are ignored."""
        if not counts:
            return
        table = table_of(PartRow)
        statement = (
            update(table).where(table.c.id == bindparam("part_id")).values(tokens=bindparam("n"))
        )
        with self._writing() as session:
            session.execute(statement, [{"part_id": k, "n": v} for k, v in counts.items()])
