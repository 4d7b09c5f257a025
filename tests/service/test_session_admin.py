"""Session management on a real SQLite file: soft delete, restore, rename, persisted gauges."""

from __future__ import annotations

import sqlite3

import pytest

from tests.appending import append
from tokend.core.errors import InvalidParams, SessionNotFound, VersionConflict
from tokend.core.types import TextPart, Usage
from tokend.service.app import open_service
from tokend.service.session import admin


@pytest.fixture
def db(tmp_path):
    return tmp_path / "admin.sqlite3"


@pytest.fixture
def service(db):
    service = open_service(None, f"sqlite:///{db}")
    yield service
    service.close()


def _session(service, workspace="file:///w"):
    sid = service.sessions.create_session("gpt-4o", title="first", workspace_uri=workspace).id
    append(service, sid, "user", [TextPart("hello " * 50)])
    append(
        service,
        sid,
        "assistant",
        [TextPart("hi")],
        usage=Usage(input_tokens=1_234, output_tokens=2),
    )
    return sid


def _rows(db, sid):
    """What is on disk, read without tokend: (messages, deleted_at, title)."""
    with sqlite3.connect(db) as conn:
        messages = conn.execute("SELECT count(*) FROM messages WHERE session_id=?", (sid,))
        deleted_at, title = conn.execute(
            "SELECT deleted_at, title FROM sessions WHERE id=?", (sid,)
        ).fetchone()
        return messages.fetchone()[0], deleted_at, title


def test_delete_hides_the_session_and_keeps_every_message(service, db):
    sid = _session(service)
    service.sessions.snapshot(sid)  # loaded in memory
    deleted = admin.delete_session(service, sid)
    assert deleted.deleted_at is not None
    assert [s.id for s in admin.list_sessions(service, "file:///w")] == []
    assert [s.id for s in admin.list_sessions(service, "file:///w", deleted=True)] == [sid]
    messages, deleted_at, _ = _rows(db, sid)
    assert messages == 2 and deleted_at is not None
    with pytest.raises(SessionNotFound):  # not served from memory any more
        service.sessions.snapshot(sid)
    again = admin.delete_session(service, sid)  # deleting twice keeps the first time
    assert again.deleted_at == deleted.deleted_at


def test_restore_brings_back_the_same_session(service, db):
    sid = _session(service)
    before = service.sessions.snapshot(sid).used_tokens
    admin.delete_session(service, sid)
    restored = admin.restore_session(service, sid)
    assert restored.deleted_at is None
    assert [s.id for s in admin.list_sessions(service, "file:///w")] == [sid]
    assert service.sessions.snapshot(sid).used_tokens == before == 1_234 + 2
    assert _rows(db, sid)[:2] == (2, None)


def test_rename_sets_the_title_and_refuses_blank_or_deleted(service, db):
    sid = _session(service)
    assert admin.rename_session(service, sid, "  the parser refactor ").title == (
        "the parser refactor"
    )
    assert _rows(db, sid)[2] == "the parser refactor"
    with pytest.raises(InvalidParams):
        admin.rename_session(service, sid, "   ")
    with pytest.raises(InvalidParams):
        admin.rename_session(service, sid, "x" * (admin.MAX_TITLE_CHARS + 1))
    admin.delete_session(service, sid)
    with pytest.raises(SessionNotFound, match="restore it first"):
        admin.rename_session(service, sid, "later")


def test_unknown_ids_are_session_not_found(service):
    for change in (admin.delete_session, admin.restore_session):
        with pytest.raises(SessionNotFound, match="tokend sessions"):
            change(service, "01NOSUCHSESSION")


def test_a_listing_gauge_matches_the_live_snapshot_and_survives_deletion(service):
    sid = _session(service)
    live = service.sessions.snapshot(sid)
    info = admin.list_sessions(service, "file:///w")[0]
    gauge = admin.session_gauge(service, info)
    assert gauge is not None
    assert (gauge.used_tokens, gauge.context_window) == (live.used_tokens, live.context_window)
    admin.delete_session(service, sid)
    deleted = admin.list_sessions(service, "file:///w", deleted=True)[0]
    kept = admin.session_gauge(service, deleted)  # from the figures persisted with the session
    assert kept is not None and kept.used_tokens == live.used_tokens


def test_delete_and_restore_are_changes_the_sessions_listeners_hear(service, db):
    sid = _session(service)
    heard = []
    service.listeners.subscribe(sid, lambda event: heard.append(event.snapshot))
    version = service.sessions.snapshot(sid).version
    admin.delete_session(service, sid)
    assert [s.version for s in heard] == [version + 1]  # told, as of any change
    with sqlite3.connect(db) as conn:  # the store moved with it, in the same transaction
        stored, deleted_at = conn.execute(
            "SELECT version, deleted_at FROM sessions WHERE id=?", (sid,)
        ).fetchone()
    assert (stored, deleted_at is not None) == (version + 1, True)
    admin.delete_session(service, sid)  # already deleted: no change, nothing told
    assert len(heard) == 1
    admin.restore_session(service, sid)
    assert [s.version for s in heard] == [version + 1, version + 2]
    assert service.sessions.snapshot(sid).version == version + 2
    assert _rows(db, sid)[:2] == (2, None)
    # A change the client based on the version before the delete is refused.
    with pytest.raises(VersionConflict):
        append(service, sid, "user", [TextPart("stale")], if_version=version)
