"""The token counts a store keeps by content (core.ports.CountCache): key "<counter name>:<sha256
hex of the UTF-8 text>" -> tokens, read and written in batches, each in one transaction of the
store's, so a restarted daemon does not count the same text again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tokend.adapters.store import rows
from tokend.adapters.store.models import TokenCacheRow
from tokend.adapters.store.rows import ReadsAndWrites


class SqlCountCache(ReadsAndWrites):
    """core.ports.CountCache on a store's read and write transactions."""

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        """Cached token counts for the keys that have one."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._reading() as session:
            return rows.existing_counts(session, wanted)

    def put_many(self, counts: Mapping[str, int]) -> None:
        """Insert or overwrite token counts (key -> tokens) in one transaction (an upsert:
        daemons sharing a database may count the same content at once)."""
        if not counts:
            return
        values = [{"key": k, "tokens": v} for k, v in counts.items()]
        with self._writing() as session:
            session.execute(rows.upsert(session, TokenCacheRow, values, ("tokens",)))
