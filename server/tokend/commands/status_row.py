"""`tokend status` with no daemon and no line kept: the line (or `--format claude-code`) from the
session row, read with sqlite3 alone (adapters/store_peek.py), in milliseconds.

Every change of a session writes, in its own transaction, what the line prints into the row's
gauge state (core.statusline.row), with the config files its figures were computed under. The
row answers when all of these hold, and then prints what reading the store whole prints:
- the store is a SQLite file (a PostgreSQL URL, `?` options or `:memory:` read it whole);
- the row has a gauge state the whole read would load the session from without counting a
  message again (core.session.gauge_state: its FORMAT, the row's version, no estimate waiting for its
  exact count), and a status block of this version and shape (rows an older tokend wrote, and a
  fork's or a handoff's before its first change, have none: the line kept may answer then);
- the config files are the ones the full read would use (the user's config.toml, and the
  .tokend.toml of the session's workspace, else of the current folder) and unchanged since;
- the format is the line or claude-code (its `transcript_path` is null, as the full read with
  no daemon gives it). `--json` prints the whole Snapshot, whose warnings and rate come from
  every session's spending and whose maxOutputTokens and compactWith come from the model
  catalog: it always reads the store whole.
Otherwise None: the caller reads the store whole (commands/status.py).
"""

from __future__ import annotations

import os

from tokend.adapters import rendezvous
from tokend.commands.status_text import claude_code_status, folder_path, gauge_line

GAUGE_STATE_FORMAT = 2  # core.session.gauge_state.FORMAT (a unit test keeps them equal)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def row_status(fmt: str, session_id: str | None, uri: str) -> tuple[str | None, bool]:
    """(what `tokend status [--format FMT] [--session ID]` prints in the folder of file URI
    `uri`, from the session row, or None when the row cannot tell; whether a line kept from an
    earlier call may answer instead: only for a row with no status block, written before the
    row kept one, as the kept line cannot see a config file change that a block does)."""
    if fmt not in ("line", "claude-code"):
        return None, False
    from tokend.adapters.store_peek import session_row, store_file
    from tokend.core.statusline.row import KEY, has_block, snapshot_of_row

    path = store_file()
    row = None if path is None else session_row(path, session_id, uri)
    if row is None:
        return None, True
    shown, version, workspace_uri, text = row
    if text is None:
        return None, True
    try:
        state = rendezvous.loads(text)
    except ValueError:
        return None, True
    block: Any = state.get(KEY) if isinstance(state, dict) else None
    if not has_block(block):
        return None, True
    snapshot = snapshot_of_row(block, shown, version)
    if snapshot is None or not _loads_lazily(state, version):
        return None, False
    if not _same_settings(block.get("settings"), workspace_uri or uri):
        return None, False
    if fmt == "line":
        return gauge_line(snapshot), False
    status = claude_code_status(snapshot, cwd=os.getcwd(), project_dir=folder_path(workspace_uri))
    return rendezvous.dumps(status), False


def _loads_lazily(state: Any, version: int) -> bool:
    """The whole read loads the session from this state (service/session/loading.py, GaugeState.of):
    the gauge it prints is the one the state was written with."""
    return (
        isinstance(state, dict)
        and state.get("format") == GAUGE_STATE_FORMAT
        and state.get("version") == version
        and not state.get("pendingExact")
    )


def _same_settings(recorded: Any, workspace_uri: str) -> bool:
    """The files the row's figures were computed under are those the whole read would use
    (service/settings/workspace_settings.py: the user's config.toml, then the workspace's .tokend.toml), each as
    it was then (stamp: mtime in ns, size, inode; None: absent)."""
    from tokend.adapters.config_paths import WORKSPACE_CONFIG_NAME, file_stamp, user_config_file

    paths = [os.path.abspath(user_config_file())]
    folder = folder_path(workspace_uri)
    if folder is not None:
        paths.append(os.path.join(folder, WORKSPACE_CONFIG_NAME))
    if not isinstance(recorded, list) or not all(
        isinstance(r, list) and len(r) == 2 for r in recorded
    ):
        return False
    if [r[0] for r in recorded] != paths:
        return False
    return all(_listed(file_stamp(path)) == stamp for path, stamp in recorded)


def _listed(stamp: tuple[int, ...] | None) -> list[int] | None:
    """A stamp as the row keeps it (JSON: a list)."""
    return None if stamp is None else list(stamp)
