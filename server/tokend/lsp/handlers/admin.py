"""session/delete, /restore, /rename (soft delete: nothing leaves the store) and session/reload
(read a session again after another process wrote it, e.g. `tokend import`)."""

from __future__ import annotations

import attrs

from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.handler_table import features, register_features
from tokend.lsp.results import SessionRefResult, to_wire_session_ref
from tokend.lsp.server import TokendServer
from tokend.service import admin


@attrs.frozen
class SessionRefParams:
    session_id: str


@attrs.frozen
class SessionRenameParams:
    session_id: str
    title: str


def delete(ls: TokendServer, params: SessionRefParams) -> SessionRefResult:
    return to_wire_session_ref(admin.delete_session(ls.service, params.session_id))


def restore(ls: TokendServer, params: SessionRefParams) -> SessionRefResult:
    return to_wire_session_ref(admin.restore_session(ls.service, params.session_id))


def rename(ls: TokendServer, params: SessionRenameParams) -> SessionRefResult:
    return to_wire_session_ref(admin.rename_session(ls.service, params.session_id, params.title))


def reload(ls: TokendServer, params: SessionRefParams) -> wire.SnapshotWire:
    return to_wire_snapshot(admin.reload_session(ls.service, params.session_id))


FEATURES = features(
    {
        "session/delete": delete,
        "session/restore": restore,
        "session/rename": rename,
        "session/reload": reload,
    }
)


def register(server: TokendServer) -> None:
    register_features(server, FEATURES)
