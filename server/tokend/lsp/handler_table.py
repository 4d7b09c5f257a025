"""Typed handlers: a JSON-RPC method's handler is a top-level function
`(ls: TokendServer, params: wire.X) -> wire.Y` (or a coroutine function), listed in its feature
module's table (lsp/handlers/<feature>.py: `FEATURES`).

`typed(handler)` is what pygls calls, built once per process: it structures the params into the
handler's own params type in one step (wire.from_wire: a wrong JSON type is refused there, with
the documented -32602 and the path of each problem), calls the handler, unstructures its result
to camelCase JSON (wire.to_wire), and turns a domain error into its JSON-RPC error (rpc)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from tokend.lsp import wire
from tokend.lsp.server import TokendServer, rpc

Feature = Callable[[TokendServer, Any], Any]


def typed(handler: Callable[[TokendServer, Any], Any]) -> Feature:
    """The feature pygls calls for `handler` (see the module docstring)."""
    params_type = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})["params"]

    if inspect.iscoroutinefunction(handler):
        run: Callable[[TokendServer, Any], Awaitable[Any]] = handler

        async def feature_async(ls: TokendServer, params: Any) -> Any:
            return wire.to_wire(await run(ls, wire.from_wire(params_type, params)))

        feature_async.__name__ = feature_async.__qualname__ = handler.__name__
        feature_async.__wrapped_handler__ = handler  # type: ignore[attr-defined]
        return rpc(feature_async)

    def feature(ls: TokendServer, params: Any) -> Any:
        return wire.to_wire(handler(ls, wire.from_wire(params_type, params)))

    feature.__name__ = feature.__qualname__ = handler.__name__
    feature.__wrapped_handler__ = handler  # type: ignore[attr-defined]
    return rpc(feature)


def features(table: Mapping[str, Callable[[TokendServer, Any], Any]]) -> dict[str, Feature]:
    """A feature module's table of typed handlers, by method, ready to register."""
    return {method: typed(handler) for method, handler in table.items()}


def register_features(server: TokendServer, table: Mapping[str, Feature]) -> None:
    for method, feature in table.items():
        server.feature(method)(feature)
