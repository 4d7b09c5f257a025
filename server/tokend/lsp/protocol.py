"""TokendProtocol: pygls's LanguageServerProtocol with tokend's methods typed our way.

pygls turns params of methods it does not know into namedtuples; here every method outside
the LSP specification keeps its params as plain JSON, and the handler structures them with
`wire.from_wire` so a bad field gets an InvalidParams error naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

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


class TokendProtocol(LanguageServerProtocol):
    # Set by a daemon: close only this connection on `exit` instead of ending the process.
    on_exit: Callable[[], None] | None = None

    def structure_message(self, data: dict[str, Any]) -> Any:
        method = data.get("method") if isinstance(data, dict) else None
        if "jsonrpc" in data and method and method not in types.METHOD_TO_TYPES:
            if "id" in data:
                return RawRequest(data["id"], method, data["jsonrpc"], data.get("params"))
            return RawNotification(method, data["jsonrpc"], data.get("params"))
        return super().structure_message(data)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        if self.on_exit is None:
            yield from super().lsp_exit(*args)
            return
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        self.on_exit()
