"""adapters.store_peek finds the store `tokend` opens and reads which session it would show.

Oracle: the SQLite file a real `tokend import` wrote (in the user data folder, at the user
config's `database_url`, at $TOKEND_DATABASE_URL over it) and the session id and version
`tokend status --json` reads through the store the full way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import session_file
from tests.e2e.status_calls import tokend
from tokend.adapters.store_peek import session_version, store_file


@pytest.mark.parametrize("where", ["default", "config", "environment over config"])
def test_the_file_tokend_opens_and_the_session_it_shows(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    configured, from_env = tmp_path / "configured.sqlite3", tmp_path / "env.sqlite3"
    if where != "default":
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f'database_url = "sqlite:///{configured}"\n')
    if where == "environment over config":
        monkeypatch.setenv("TOKEND_DATABASE_URL", f"sqlite:///{from_env}")
    tokend(project, "import", "claude-code", str(session_file("short.jsonl")), "--workspace", ".")
    expected = {
        "default": Path(os.environ["XDG_DATA_HOME"]) / "tokend" / "tokend.sqlite3",
        "config": configured,
        "environment over config": from_env,
    }[where]
    written = {*tmp_path.rglob("*.sqlite3"), *Path(os.environ["XDG_DATA_HOME"]).rglob("*.sqlite3")}
    assert written == {expected}, written
    assert store_file() == str(expected)
    shown = json.loads(tokend(project, "status", "--json"))
    uri = project.resolve().as_uri()
    assert session_version(str(expected), None, uri) == (shown["sessionId"], shown["version"])
    assert session_version(str(expected), shown["sessionId"], "") == (
        shown["sessionId"],
        shown["version"],
    )
    assert session_version(str(expected), "nope", "") is None
    assert session_version(str(tmp_path / "absent.sqlite3"), None, uri) is None
    assert not (tmp_path / "absent.sqlite3").exists()
