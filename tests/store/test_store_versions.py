"""Versions allocated by the database, on SQLite and on PostgreSQL: compare-and-set in the
change's own transaction, a holding transaction, idempotent message ids, catching up."""

from __future__ import annotations

import threading

import pytest

from tests.store.conftest import message, session_info
from tokend.adapters.store import SqlStore
from tokend.core.commit import SessionCommit
from tokend.core.errors import AlreadyStored, ChangedElsewhere, VersionConflict


def test_a_change_on_a_stale_version_is_refused_and_writes_nothing(db_url: str) -> None:
    with SqlStore.open(db_url) as a, SqlStore.open(db_url) as b:  # two daemons
        a.create_session(session_info("s"))
        a.commit_change("s", SessionCommit(version=(0, 1), message=message("s"), message_tokens=7))
        stale = message("s")
        with pytest.raises(ChangedElsewhere) as refused:
            b.commit_change("s", SessionCommit(version=(0, 1), message=stale, message_tokens=7))
        assert isinstance(refused.value, VersionConflict)
        assert refused.value.data == {"currentVersion": 1}
        assert [m.id for m in b.messages.load_messages("s")] != [] and stale.id not in {
            m.id for m in b.messages.load_messages("s")
        }
        assert b.get_session("s").version == 1  # type: ignore[union-attr]


def test_the_same_message_id_is_stored_once_and_tells_what_its_append_made(db_url: str) -> None:
    with SqlStore.open(db_url) as store:
        store.create_session(session_info("s"))
        first = message("s")
        store.commit_change("s", SessionCommit(version=(0, 1), message=first, message_tokens=11))
        with pytest.raises(AlreadyStored) as again:
            store.commit_change(
                "s", SessionCommit(version=(1, 2), message=first, message_tokens=11)
            )
        assert (again.value.stored.version, again.value.stored.tokens) == (1, 11)
        assert store.get_session("s").version == 1  # type: ignore[union-attr]
        found = store.messages.find_message(first.id)
        assert found is not None and found.session_id == "s"


def test_load_since_gives_the_messages_appended_after_a_version(db_url: str) -> None:
    with SqlStore.open(db_url) as store:
        store.create_session(session_info("s"))
        appended = [message("s") for _ in range(5)]
        for version, m in enumerate(appended, start=1):
            store.commit_change(
                "s", SessionCommit(version=(version - 1, version), message=m, message_tokens=3)
            )
        info, fresh = store.messages.load_since("s", 2)
        assert info.version == 5
        assert [m.id for m in fresh] == [m.id for m in appended[2:]]


def test_a_holding_transaction_keeps_other_writers_out_until_it_commits(db_url: str) -> None:
    with SqlStore.open(db_url) as a, SqlStore.open(db_url) as b:
        a.create_session(session_info("s"))
        order: list[str] = []
        held = threading.Event()

        def other() -> None:
            held.wait(10)
            try:
                b.commit_change(
                    "s", SessionCommit(version=(0, 1), message=message("s"), message_tokens=1)
                )
                order.append("other committed")
            except ChangedElsewhere:
                order.append("other refused")

        thread = threading.Thread(target=other)
        thread.start()
        with a.hold("s") as holding:
            held.set()
            thread.join(0.5)  # the other writer waits for the lock meanwhile
            order.append("holder commits")
            holding.commit_change(
                SessionCommit(version=(0, 1), message=message("s"), message_tokens=1)
            )
        thread.join(20)
        assert order == ["holder commits", "other refused"]
        assert a.get_session("s").version == 1  # type: ignore[union-attr]
