"""tokend makes its own folders private, and never changes a folder it did not make.

Found: a workspace cache or checkpoint file named in a shared folder (the machine's temporary
folder, mode 1777) had that folder chmod-ed to 0700 by `make_folder_private`, which locked every
other user, and PostgreSQL running as another user, out of it. Oracle: the folder's mode on disk.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tokend.adapters.checkpoint_store import CheckpointStore
from tokend.adapters.store.url import default_data_dir, make_folder_private
from tokend.adapters.workspace_cache import WorkspaceCache


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)  # as the system temporary folder is
    return folder


def test_a_file_named_in_a_shared_folder_leaves_the_folder_as_it_was(shared: Path) -> None:
    cache = WorkspaceCache(shared / "cache.sqlite3")
    cache.close()
    CheckpointStore(shared / "checkpoints").close()
    assert _mode(shared) == 0o1777
    assert _mode(shared / "checkpoints") == 0o700  # the folder tokend made is private
    assert _mode(shared / "cache.sqlite3") & 0o077 == 0  # and so is the file it wrote


def test_tokends_own_folder_left_open_by_an_older_tokend_is_narrowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    own = default_data_dir()
    own.mkdir(parents=True)
    own.chmod(0o755)
    assert make_folder_private(own) == own
    assert _mode(own) == 0o700
