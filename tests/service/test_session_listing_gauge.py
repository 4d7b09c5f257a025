"""One gauge for a session wherever it is listed: `session/list` (service.session.sessions.session_gauges) and
`tokend sessions` (admin.session_gauge) show the same figures, and they are the session's own.

The store is one the tokend before migration 0005 made (tests/store/data), with each stored
gauge cut back to what an older tokend kept (no `estimated`): the two listings used to fill
the gap with opposite defaults (True and False). The oracle is what that tokend reported from
the loaded sessions: `estimated` is false exactly when a provider's figure anchors the gauge.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from tokend.service.app import open_service
from tokend.service.session import admin

DATA = Path(__file__).parents[1] / "store" / "data"
WORKSPACE = "file:///home/dev/project"


def test_both_listings_show_the_sessions_own_estimated_flag(tmp_path: Path) -> None:
    reported = json.loads((DATA / "main_store.json").read_text())
    path = tmp_path / "older.sqlite3"
    shutil.copyfile(DATA / "main_store.sqlite3", path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET extra = json_remove(extra, '$.gauge.estimated')")
    service = open_service(None, f"sqlite:///{path}")
    try:
        listed = {
            info.id: (info, gauge) for info, gauge in service.sessions.session_gauges(WORKSPACE)
        }
        seen = set()
        for name, entry in reported.items():
            if name == "deleted":
                continue
            info, on_the_wire = listed[entry["id"]]
            in_the_cli = admin.session_gauge(service, info)
            assert in_the_cli is not None
            expected = entry["snapshot"]["estimated"]
            assert (on_the_wire.estimated, in_the_cli.estimated) == (expected, expected), name
            assert on_the_wire.used_tokens == in_the_cli.used_tokens == entry["listed"][0]
            seen.add(expected)
        assert seen == {True, False}  # anchored and unanchored sessions both checked
    finally:
        service.close()
