"""Which database tokend opens: explicit URL, then $TOKEND_DATABASE_URL, then the user data dir."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from tokend.adapters.store import SqlStore, resolve_database_url


def test_explicit_url_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOKEND_DATABASE_URL", "sqlite:///from-env.sqlite3")
    assert resolve_database_url("postgresql://db/tokend") == "postgresql://db/tokend"
    assert resolve_database_url() == "sqlite:///from-env.sqlite3"


def test_default_is_a_sqlite_file_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("TOKEND_DATABASE_URL", raising=False)
    data_dir = tmp_path / "data" / "tokend"
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda *a, **k: str(data_dir))
    url = resolve_database_url()
    assert url == "sqlite:///" + (data_dir / "tokend.sqlite3").as_posix()
    assert data_dir.is_dir()  # created, so SQLite can make the file
    with SqlStore.open() as store:
        assert store.listings.listed() == []
    assert (data_dir / "tokend.sqlite3").is_file()
