"""A serving app (the daemon's, `tokend lsp --standalone`'s) makes before its first request the
reads a session's first load makes, so that SQLAlchemy compiles their statements then and not
in a restarted daemon's first `context/assemble` (issue 22, the cold assemble: the session row's
ORM get, the live context's read and the count cache's lookup, about 10 ms of it).

Counted on both engines: the statements a first `context/assemble` after a restart sends that
SQLAlchemy had to compile (its execution context's cache_hit is CACHE_MISS). Main c84769f: 3
(the session's row, the count cache's lookup, the live context's read). The reply is the one
the same session gave before the restart."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event

from tests.appending import append, run_on_own_loop
from tokend.adapters.store.url import sqlite_url
from tokend.core.types import TextPart, Usage
from tokend.service.app import App, open_app
from tokend.service.assembly.assemble import AssembleInput, assemble_context_async

REQUEST = AssembleInput(format="openai", system="You are a careful engineer.")


@contextmanager
def compiled(engine: Any) -> Iterator[list[str]]:
    """The statements SQLAlchemy compiled (not found in its cache) while inside."""
    missed: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if str(context.cache_hit).endswith("CACHE_MISS"):
            missed.append(statement)

    event.listen(engine, "after_cursor_execute", seen)
    try:
        yield missed
    finally:
        event.remove(engine, "after_cursor_execute", seen)


def first_assemble(app: App, session_id: str) -> Any:
    service = app.service
    return run_on_own_loop(assemble_context_async(service, session_id, REQUEST, usage=app.usage))


def test_the_first_assemble_after_a_restart_compiles_no_statement(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = open_app(None, db_url, serving=True)
    try:
        service = app.service
        sid = service.sessions.create_session("gpt-4o", workspace_uri="file:///ws").id
        for i in range(5):
            append(service, sid, "user", [TextPart(f"question {i}")])
            usage = Usage(input_tokens=100 + i, output_tokens=10)
            append(service, sid, "assistant", [TextPart(f"answer {i}")], usage=usage)
        before = first_assemble(app, sid)
    finally:
        app.close()

    reopened = open_app(None, db_url, serving=True)  # a restart
    try:
        with compiled(reopened.service.store.engine) as missed:
            after = first_assemble(reopened, sid)
        assert missed == []  # main c84769f: the session's row, the count cache, the messages
        assert after.messages == before.messages
        assert (after.total_tokens, after.chunks) == (before.total_tokens, before.chunks)
    finally:
        reopened.close()


def test_a_store_whose_first_reads_fail_still_serves_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The preparation is a warm-up: a store its reads find damaged (SQLite's "database disk
    image is malformed" on the live context's pages, made here by the driver's error at the
    cursor; SQLite: the driver's own error) is left to the start's check and to the requests,
    which say so (cold4's 255e648 raised StoreError out of open_app: the daemon did not start)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db_url = sqlite_url(tmp_path / "tokend.sqlite3")

    def malformed(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        values = parameters.values() if isinstance(parameters, dict) else parameters
        if "FROM messages" in statement and "" in values:  # the preparation's: no session
            raise sqlite3.DatabaseError("database disk image is malformed")

    event.listen(Engine, "before_cursor_execute", malformed)
    try:
        with caplog.at_level(logging.WARNING, logger="tokend.adapters.store.sql_store"):
            app = open_app(None, db_url, serving=True)
    finally:
        event.remove(Engine, "before_cursor_execute", malformed)
    try:
        assert "the store's first reads were not prepared" in caplog.text
        sid = app.service.sessions.create_session("gpt-4o", workspace_uri="file:///ws").id
        append(app.service, sid, "user", [TextPart("question")])
        assert first_assemble(app, sid).messages[-1] == {"role": "user", "content": "question"}
    finally:
        app.close()
