"""session/delete, /restore, /rename (soft delete: nothing leaves the store) and session/reload
(read a session again after another process wrote it, e.g. `tokend import`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from tokend.lsp import wire
from tokend.lsp.convert import to_wire_snapshot
from tokend.lsp.results import to_wire_session_ref
from tokend.service import admin

if TYPE_CHECKING:  # the CLI imports the wire types below without loading pygls
    from tokend.lsp.server import TokendServer


@attrs.frozen
class SessionRefParams:
    session_id: str


@attrs.frozen
class SessionRenameParams:
    session_id: str
    title: str


def register(server: TokendServer) -> None:
    from tokend.lsp.server import rpc

    @server.feature("session/delete")
    @rpc
    def delete(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(SessionRefParams, params)
        return wire.to_wire(to_wire_session_ref(admin.delete_session(ls.service, p.session_id)))

    @server.feature("session/restore")
    @rpc
    def restore(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(SessionRefParams, params)
        return wire.to_wire(to_wire_session_ref(admin.restore_session(ls.service, p.session_id)))

    @server.feature("session/rename")
    @rpc
    def rename(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(SessionRenameParams, params)
        info = admin.rename_session(ls.service, p.session_id, p.title)
        return wire.to_wire(to_wire_session_ref(info))

    @server.feature("session/reload")
    @rpc
    def reload(ls: TokendServer, params: Any) -> Any:
        p = wire.from_wire(SessionRefParams, params)
        return wire.to_wire(to_wire_snapshot(admin.reload_session(ls.service, p.session_id)))
