"""Where the settings files are and how a file's stamp is taken, in one place for the settings
(adapters/config_files.py, service/settings/workspace_settings.py) and for the cold `tokend status`, which compares
the stamps a session row was written under with the files as they are now
(commands/status_row.py). Standard library only: the cold status must not import the config
schema (cattrs) to find one path."""

from __future__ import annotations

import os

WORKSPACE_CONFIG_NAME = ".tokend.toml"

FileStamp = tuple[int, int, int]
"""(st_mtime_ns, st_size, st_ino): changes when a file is written or replaced."""


def user_config_file() -> str:
    """config.toml in the platform's user config folder for "tokend" (~/.config/tokend on Linux,
    or $XDG_CONFIG_HOME/tokend when that is set)."""
    import platformdirs

    return os.path.join(platformdirs.user_config_dir("tokend"), "config.toml")


def file_stamp(path: str | os.PathLike[str]) -> FileStamp | None:
    """The file's stamp (one os.stat), None when it does not exist or cannot be looked at."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)
