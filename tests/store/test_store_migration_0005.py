"""Migration 0005 on a store made by the tokend before it (data/make_main_store.py): the
session's figures move out of `extra` into their own columns, `extra` keeps the client's keys,
and today's code lists and loads every session with the figures that tokend reported.

Run on the SQLite file itself, and on PostgreSQL with the same rows copied into a database at
revision 0004 (the schema that tokend made)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from tokend.adapters.store import SqlStore
from tokend.adapters.store.engine import create_store_engine
from tokend.adapters.store.migrate import alembic_config
from tokend.adapters.store.url import sqlite_url
from tokend.service.app import open_service
from tokend.service.session import admin

DATA = Path(__file__).parent / "data"
WORKSPACE = "file:///home/dev/project"
REPORTED: dict[str, dict[str, Any]] = json.loads((DATA / "main_store.json").read_text())
# What the client put in `extra` (the rest of the old `extra` was tokend's own).
CLIENT_KEYS = {"anchored": {"clientTag": "kept by the client"}}
OLD_TABLES = ("sessions", "messages", "parts", "tool_outputs", "calibration", "token_cache")


def _old_extras() -> dict[str, dict[str, Any]]:
    """Each session's `extra` as that tokend wrote it, read with sqlite3 alone."""
    names = {entry["id"]: name for name, entry in REPORTED.items()}
    with sqlite3.connect(DATA / "main_store.sqlite3") as conn:
        rows = conn.execute("SELECT id, extra FROM sessions").fetchall()
    assert {sid for sid, _ in rows} == set(names)  # the file holds the sessions the JSON names
    return {names[sid]: json.loads(extra) for sid, extra in rows}


def _copy_into_postgres(source: Path, url: str) -> None:
    """The old store's rows in a PostgreSQL database at revision 0004."""
    engine = create_store_engine(url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0004")
        old = sa.create_engine(f"sqlite:///{source}")
        meta = sa.MetaData()
        meta.reflect(old, only=OLD_TABLES)
        target = sa.MetaData()
        target.reflect(engine, only=OLD_TABLES)
        with old.connect() as read, engine.begin() as write:
            for name in OLD_TABLES:  # parents first
                rows = [dict(r) for r in read.execute(meta.tables[name].select()).mappings()]
                for row in rows:
                    for key, value in row.items():
                        if isinstance(value, datetime) and value.tzinfo is None:
                            row[key] = value.replace(tzinfo=UTC)  # SQLite keeps UTC, no zone
                if rows:
                    write.execute(target.tables[name].insert(), rows)
        old.dispose()
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a copy of the old store, not yet migrated."""
    copy = tmp_path / "old.sqlite3"
    shutil.copyfile(DATA / "main_store.sqlite3", copy)
    if request.param == "sqlite":
        yield sqlite_url(copy)
        return
    url = str(request.getfixturevalue("pg_url"))
    _copy_into_postgres(copy, url)
    yield url


def _columns(url: str) -> dict[str, dict[str, Any]]:
    """The migrated sessions rows, by the names of the JSON, read with plain SQL."""
    engine = create_store_engine(url)
    names = {entry["id"]: name for name, entry in REPORTED.items()}
    try:
        with engine.connect() as conn:
            table = sa.Table("sessions", sa.MetaData(), autoload_with=conn)
            rows = conn.execute(table.select()).mappings().all()
            return {names[r["id"]]: dict(r) for r in rows}
    finally:
        engine.dispose()


def test_the_figures_leave_extra_for_typed_columns_value_for_value(old_store: str) -> None:
    old = _old_extras()
    SqlStore.open(old_store).close()  # migrates to head
    rows = _columns(old_store)
    for name, row in rows.items():
        was = old[name]
        assert row["extra"] == CLIENT_KEYS.get(name, {}), name
        assert row["compactions"] == was["compactions"]
        assert row["rewinds"] == was.get("rewinds", 0)
        assert row["forked_from"] == was.get("forkedFrom")
        assert row["handoff_from"] == was.get("handoffFrom")
        assert row["goal"] == was.get("goal")
        if "gauge" in was:
            gauge = was["gauge"]
            assert (
                row["gauge_used_tokens"],
                row["gauge_used_percentage"],
                row["gauge_context_window"],
                bool(row["gauge_estimated"]),
                row["gauge_version"],
                row["gauge_model"],
            ) == (
                gauge["usedTokens"],
                gauge["usedPercentage"],
                gauge["contextWindow"],
                gauge["estimated"],
                gauge["version"],
                gauge["model"],
            ), name
            assert row["measured"] == was["measured"]
            assert bool(row["measured_exact"]) == was["measuredExact"]
            assert row["estimate_errors"] == was["errors"]
        else:  # a fork no change has moved since: no gauge stored yet
            assert row["gauge_used_tokens"] is None
    anchored, was = rows["anchored"], old["anchored"]
    assert was["measured"] == {"system": 120, "tools": 310} and was["errors"]  # not vacuous
    delta = was["anchorDelta"]
    assert (anchored["anchor_message_id"], anchored["anchor_delta_tokens"]) == (
        delta["messageId"],
        delta["tokens"],
    )
    assert anchored["chat_files"] == was["workspaceFiles"]
    assert anchored["transcript_cursor"] == was["transcript"]
    assert rows["compacted"]["rewinds"] == 1
    assert rows["forked"]["forked_from"] is not None


def test_the_migrated_store_lists_and_loads_what_that_tokend_reported(old_store: str) -> None:
    service = open_service(None, old_store)
    try:
        listed = {info.id: gauge for info, gauge in service.sessions.session_gauges(WORKSPACE)}
        for name, entry in REPORTED.items():
            if name == "deleted":
                deleted = admin.list_sessions(service, None, deleted=True)
                [info] = [i for i in deleted if i.id == entry["id"]]
                assert info.deleted_at is not None
                gauge = admin.session_gauge(service, info)
            else:
                gauge = listed[entry["id"]]
            assert gauge is not None
            assert [gauge.used_tokens, gauge.estimated] == entry["listed"], name
        for name, entry in REPORTED.items():
            if "snapshot" not in entry:
                continue
            s = service.sessions.snapshot(entry["id"])
            shown = {
                "usedTokens": s.used_tokens,
                "estimated": s.estimated,
                "compactions": s.compactions,
                "version": s.version,
                "contextWindow": s.context_window,
            }
            assert shown == entry["snapshot"], name
        info = service.sessions.state(REPORTED["anchored"]["id"]).data.info
        assert [(f.path, f.read_only) for f in info.chat_files] == [
            ("src/parser.py", False),
            ("README.md", True),
        ]
        assert info.transcript_cursor is not None and info.transcript_cursor["lastUuid"] == "u-3"
    finally:
        service.close()


def test_a_downgrade_puts_the_figures_back_into_extra(old_store: str) -> None:
    old = _old_extras()
    SqlStore.open(old_store).close()
    engine = create_store_engine(old_store)
    try:
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "0004")
        with engine.connect() as conn:
            back = dict(conn.execute(sa.text("SELECT id, extra FROM sessions")).all())
    finally:
        engine.dispose()
    for name, entry in REPORTED.items():
        extra = back[entry["id"]]
        extra = json.loads(extra) if isinstance(extra, str) else extra
        for key, value in old[name].items():
            if value is not None:
                assert extra[key] == value, (name, key)
