"""Writes `main_store.sqlite3` and `main_store.json` with the tokend that kept its figures in
the session's `extra` (run with that tree's code: PYTHONPATH=<its checkout>/server; the files
here were made with main at 9f76291, the last revision before migration 0005).

The store holds sessions grown through that tokend's own service: provider figures, an
estimate error, a prune after the last call (a delta on the anchor), the measured context, a
client's key beside the chat files and a transcript cursor (written as files/add and the
importer wrote them), a compaction and a rewind, a fork, a handoff and a deleted session. The
JSON keeps what that tokend reported for each: its snapshot's figures and its listing's gauge.
test_store_migration_0005 opens a copy with today's code and checks both against them.

    PYTHONPATH=<old>/server python tests/store/data/make_main_store.py tests/store/data
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

from tokend.service.factory import build_service

from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.session import admin, history
from tokend.service.session.handoff import handoff

MODEL = "gpt-4o"
WORKSPACE = "file:///home/dev/project"


def grow(service, folder: Path) -> dict[str, str]:
    anchored = service.create_session(MODEL, title="anchored", workspace_uri=WORKSPACE).id
    service.append(anchored, "user", [TextPart("the parser drops the last token; fix it " * 30)])
    call = ToolCallPart("call_1", "read_file", {"path": "src/parser.py"})
    service.append(anchored, "assistant", [call], usage=Usage(input_tokens=1_480, output_tokens=24))
    _, after_read = service.append(
        anchored, "tool", [ToolResultPart("call_1", "read_file", "token = next(it)\n" * 300)]
    )
    service.append(
        anchored,
        "assistant",
        [TextPart("the loop stops one short; fixed")],
        usage=Usage(input_tokens=after_read.used_tokens + 37, output_tokens=12),
    )
    result_part = service.state(anchored).data.messages[2].parts[0].id
    service.prune_parts(anchored, [result_part])  # after the last call: a delta on the anchor
    service.set_measured(anchored, {"system": 120, "tools": 310}, False)
    service.update_info(
        anchored,
        extra={
            "clientTag": "kept by the client",
            "workspaceFiles": [
                {"path": "src/parser.py", "readOnly": False},
                {"path": "README.md", "readOnly": True},
            ],
            "transcript": {
                "source": "claude-code",
                "sessionId": "6f1c2a9e",
                "path": "/home/dev/.claude/projects/p/6f1c2a9e.jsonl",
                "records": 3,
                "lastUuid": "u-3",
                "lastParts": 1,
                "replyUuid": "u-2",
                "replyParts": 1,
            },
        },
    )

    compacted = service.create_session(MODEL, title="compacted", workspace_uri=WORKSPACE).id
    for i in range(4):
        service.append(compacted, "user", [TextPart(f"step {i}: rename the helper " * 20)])
    service.append_boundary(compacted, "the helper was renamed in four steps")
    kept, _ = service.append(compacted, "user", [TextPart("now the tests")])
    service.append(compacted, "user", [TextPart("and the docs")])
    asyncio.run(history.rewind(service, compacted, kept.id, None))

    at_call = service.state(anchored).data.messages[1].id  # the first provider call
    forked, _ = history.fork(service, anchored, at_call, "forked")
    handed = asyncio.run(handoff(service, compacted, "write the release notes"))
    deleted = service.create_session(MODEL, title="deleted", workspace_uri=WORKSPACE).id
    service.append(deleted, "user", [TextPart("never mind")])
    service.snapshot(deleted)
    admin.delete_session(service, deleted)
    return {
        "anchored": anchored,
        "compacted": compacted,
        "forked": forked.id,
        "handoff": handed.child.id,
        "deleted": deleted,
    }


def reported(service, ids: dict[str, str]) -> dict[str, dict[str, object]]:
    """What that tokend showed for each session: its snapshot (loaded) and listing gauge."""
    shown: dict[str, dict[str, object]] = {}
    for name, sid in ids.items():
        info = service.store.get_session_including_deleted(sid)
        gauge = admin.session_gauge(service, info)
        entry: dict[str, object] = {
            "id": sid,
            "listed": None if gauge is None else [gauge.used_tokens, gauge.estimated],
        }
        if info.deleted_at is None:
            s = service.snapshot(sid)
            entry["snapshot"] = {
                "usedTokens": s.used_tokens,
                "estimated": s.estimated,
                "compactions": s.compactions,
                "version": s.version,
                "contextWindow": s.context_window,
            }
        shown[name] = entry
    return shown


def main(folder: Path) -> None:
    path = folder / "main_store.sqlite3"
    path.unlink(missing_ok=True)
    service = build_service(None, f"sqlite:///{path}")
    ids = grow(service, folder)
    for sid in ids.values():
        service.forget(sid)  # what follows is read back from the store, as a restart would
    shown = reported(service, ids)
    service.close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")  # one file: nothing in a -wal beside it
    (folder / "main_store.json").write_text(json.dumps(shown, indent=2) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
