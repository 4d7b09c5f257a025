"""session/handoff on a real SQLite store and real files: the child's first message, the files
ranked by the artifact trail, the budgets. Oracles: the bytes on disk, tiktoken's counts, the
texts and tool calls this test wrote, the store's rows."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from tests.appending import append
from tokend.adapters.tokenizers import load_encoding
from tokend.core.errors import InvalidParams
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
from tokend.service.app import open_service
from tokend.service.session.handoff import handoff


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    for name in ("a", "b", "c", "d", "e"):
        (root / "src" / f"{name}.py").write_text(f"def {name}():\n    return '{name} ü'\n" * 20)
    (root / "src" / "huge.py").write_text("x = 1  # filler\n" * 20_000)
    (root / "src" / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (tmp_path / "secret.txt").write_text("outside the workspace")
    return root


def _touch(service, sid, i, tool, path, *, failed=False):
    call = ToolCallPart(f"c{i}", tool, {"file_path": path})
    append(service, sid, "assistant", [call])
    append(service, sid, "user", [ToolResultPart(f"c{i}", tool, "ok", is_error=failed)])


def _session(service, project):
    sid = service.sessions.create_session("gpt-4o", workspace_uri=project.as_uri()).id
    append(service, sid, "user", [TextPart("refactor the parser; never touch the public API")])
    touches = [
        ("Read", "src/a.py"),
        ("Edit", "src/b.py"),
        ("Read", "src/c.py"),
        ("Read", "src/huge.py"),
        ("Read", "src/blob.bin"),
        ("Read", "../secret.txt"),
        ("Read", "src/gone.py"),
        ("Edit", "src/d.py"),
        ("Read", str(project / "src" / "a.py")),  # absolute, inside the workspace
    ]
    for i, (tool, path) in enumerate(touches):
        _touch(service, sid, i, tool, path)
    _touch(service, sid, 50, "Edit", "src/e.py", failed=True)  # a failed edit is no touch
    call = ToolCallPart("rm", "Bash", {"command": "rm src/c.py"})  # c.py: deleted last
    append(service, sid, "assistant", [call])
    append(service, sid, "user", [ToolResultPart("rm", "Bash", "")])
    append(service, sid, "assistant", [TextPart("The parser is half refactored.")])
    return sid


def test_the_child_starts_with_the_context_and_the_most_recent_files(tmp_path, project):
    db = tmp_path / "db.sqlite3"
    service = open_service(None, f"sqlite:///{db}")
    sid = _session(service, project)
    parent_before = service.sessions.snapshot(sid)
    done = asyncio.run(handoff(service, sid, "write the tests for b.py"))
    listed = [(f.path, f.included, f.reason) for f in done.files]
    absolute_a = str(project / "src" / "a.py")
    # The goal names b.py: first; then the most recently touched first. c.py was deleted,
    # e.py's only edit failed: neither is offered.
    assert listed == [
        ("src/b.py", True, None),
        (absolute_a, True, None),
        ("src/d.py", True, None),
        ("src/gone.py", False, "not on disk now"),
        ("../secret.txt", False, "outside the workspace folder"),
        ("src/blob.bin", False, "binary"),
        ("src/huge.py", False, "over the 25,000-token budget"),
    ]  # src/a.py, read first under its relative name, is the same file: given once
    first = service.sessions.state(done.child.id).data.messages
    assert len(first) == 1 and first[0].summary and first[0].role == "system"
    text = first[0].parts[0].part.summary  # type: ignore[union-attr]
    for name in ("b", "d", "a"):
        assert (project / "src" / f"{name}.py").read_text().rstrip() in text
    assert "outside the workspace" not in text and "filler" not in text
    assert "write the tests for b.py" in text
    assert "refactor the parser; never touch the public API" in text  # the user's words
    enc = load_encoding("o200k_base")
    shown = sum(len(enc.encode((project / "src" / f"{n}.py").read_text())) for n in "bda")
    assert shown <= 25_000 and text.count("def a():") == 20
    assert done.child.parent_id == sid and done.snapshot.version >= 1
    # The parent is unchanged; the child is in the store with one message.
    assert service.sessions.snapshot(sid).version == parent_before.version
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT count(*) FROM messages WHERE session_id = ?", (done.child.id,)
        ).fetchone()
    assert rows == (1,)
    service.close()


def test_the_file_budgets_are_configurable(tmp_path, project):
    (project / ".tokend.toml").write_text("[handoff]\nmax_files = 1\nfile_tokens = 100000\n")
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = _session(service, project)
    done = asyncio.run(handoff(service, sid, "continue"))
    assert [(f.path, f.included) for f in done.files] == [(str(project / "src" / "a.py"), True)]
    with pytest.raises(InvalidParams):
        asyncio.run(handoff(service, sid, "   "))
    service.close()


def test_a_session_without_a_workspace_lists_its_files_and_reads_none(tmp_path, project):
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    _touch(service, sid, 1, "Read", str(project / "src" / "a.py"))
    done = asyncio.run(handoff(service, sid, "go on"))
    assert [(f.included, f.reason) for f in done.files] == [
        (False, "the session has no workspace folder")
    ]
    service.close()


def test_a_handoff_cancelled_while_its_child_is_being_created_completes_the_child(
    tmp_path, project
):
    """Found: a cancel that reached a handoff while the child session was being written left a
    child without its first message behind a RequestCancelled. Once the child is being created,
    the handoff finishes it and returns it."""
    db = tmp_path / "db.sqlite3"
    service = open_service(None, f"sqlite:///{db}")
    sid = _session(service, project)
    entered, release = threading.Event(), threading.Event()
    create = service.store.create_session

    def slow_create(info):  # the store write, held until the cancel has been sent
        entered.set()
        release.wait(10)
        return create(info)

    service.store.create_session = slow_create  # type: ignore[method-assign]

    async def scenario():
        task = asyncio.ensure_future(handoff(service, sid, "write the tests for b.py"))
        while not entered.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        release.set()
        return await task

    done = asyncio.run(scenario())
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT count(*) FROM messages WHERE session_id = ?", (done.child.id,)
        ).fetchone()
    assert rows == (1,)
    service.close()
