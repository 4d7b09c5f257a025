"""TokendProtocol: pygls's LanguageServerProtocol with tokend's methods typed our way.

pygls turns params of methods it does not know into namedtuples; here every method outside
the LSP specification keeps its params as plain JSON, and the handler structures them with
`wire.from_wire` so a bad field gets an InvalidParams error naming it.
"""

from __future__ import annotations

from typing import Any

import attrs
from lsprotocol import types

from tokend.daemon.conn import ConnectionProtocol

MsgId = int | str


@attrs.define
class RawRequest:
    id: MsgId
    method: str
    jsonrpc: str
    params: Any = None


@attrs.define
class RawNotification:
    method: str
    jsonrpc: str
    params: Any = None


class TokendProtocol(ConnectionProtocol):
    """`exit` closes only this connection under a daemon (ConnectionProtocol's on_exit hook)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        method = data.get("method") if isinstance(data, dict) else None
        if "jsonrpc" in data and method and method not in types.METHOD_TO_TYPES:
            if "id" in data:
                return RawRequest(data["id"], method, data["jsonrpc"], data.get("params"))
            return RawNotification(method, data["jsonrpc"], data.get("params"))
        return super().structure_message(data)
