"""Typed handlers: a JSON-RPC method's handler is a top-level function
`(ls: TokendServer, params: wire.<feature>.X) -> wire.<feature>.Y` (or a coroutine function),
listed in its feature module's table (lsp/handlers/<feature>.py: `FEATURES`). LSP's own
notifications (textDocument/didOpen, ...) are top-level functions taking lsprotocol's types,
listed in `NOTIFICATIONS`: pygls structures those.

`typed(handler)` is what pygls calls, built once per process: it structures the params into the
handler's own params type in one step (wire.from_wire: a wrong JSON type is refused there, with
the documented -32602 and the path of each problem; a params class may add what protocol.md
says of the raw params in a static `check_raw`), calls the handler, unstructures its result to
camelCase JSON (wire.to_wire: the one converter), and turns a domain error into its JSON-RPC
error (rpc)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

import attrs

from tokend.lsp import wire
from tokend.lsp.server import TokendServer, rpc

Feature = Callable[[TokendServer, Any], Any]


def typed(handler: Callable[[TokendServer, Any], Any]) -> Feature:
    """The feature pygls calls for `handler` (see the module docstring)."""
    params_type = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})["params"]
    check_raw: Callable[[Any], None] = getattr(params_type, "check_raw", lambda _: None)

    def structure(params: Any) -> Any:
        if params_type is wire.NoParams:  # whatever is sent (nvim's empty table is `[]`)
            return wire.NoParams()
        check_raw(params)
        return wire.from_wire(params_type, params)

    if inspect.iscoroutinefunction(handler):
        run: Callable[[TokendServer, Any], Awaitable[Any]] = handler

        async def feature_async(ls: TokendServer, params: Any) -> Any:
            return wire.to_wire(await run(ls, structure(params)))

        feature_async.__name__ = feature_async.__qualname__ = handler.__name__
        feature_async.__wrapped_handler__ = handler  # type: ignore[attr-defined]
        return rpc(feature_async)

    def feature(ls: TokendServer, params: Any) -> Any:
        return wire.to_wire(handler(ls, structure(params)))

    feature.__name__ = feature.__qualname__ = handler.__name__
    feature.__wrapped_handler__ = handler  # type: ignore[attr-defined]
    return rpc(feature)


def features(table: Mapping[str, Callable[[TokendServer, Any], Any]]) -> dict[str, Feature]:
    """A feature module's table of typed handlers, by method, ready to register."""
    return {method: typed(handler) for method, handler in table.items()}


# An agent's loop (README): the methods a restarted daemon is asked first, and waits on.
AGENT_LOOP = ("session/create", "session/append", "context/assemble", "budget/snapshot")


def prepare_hooks(modules: Iterable[ModuleType], methods: Iterable[str] = AGENT_LOOP) -> int:
    """Build the converter's hooks for the params and results of `methods`' handlers (in the
    handler modules' `FEATURES`) and for the wire classes their fields hold, as their first
    request would: cattrs writes a class's hook the first time a process meets it
    (ContextAssembleParams 1.8 ms, AssembleResult 1.7 of a restarted daemon's first
    `context/assemble`, issue 22). How many classes it was given."""
    wanted = set(methods)
    params: list[Any] = []
    results: list[Any] = []
    for module in modules:
        for method, feature in getattr(module, "FEATURES", {}).items():
            handler = getattr(feature, "__wrapped_handler__", None)
            if method in wanted and handler is not None:
                hints = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})
                params.append(hints["params"])
                results.append(hints.get("return"))
    structured, unstructured = _wire_classes(params), _wire_classes(results)
    for cls in structured:
        wire.converter.get_structure_hook(cls)
    for cls in unstructured:
        wire.converter.get_unstructure_hook(cls)
    return len(structured) + len(unstructured)


def _wire_classes(types: Iterable[Any]) -> list[type]:
    """The attrs classes in `types` (unions and generics opened) and in their fields, each once,
    a class before the classes its fields hold."""
    found: dict[type, None] = {}
    stack = list(types)[::-1]
    while stack:
        kind = stack.pop()
        if attrs.has(kind) and kind is not wire.NoParams:
            if kind in found:
                continue
            found[kind] = None
            stack.extend(reversed([f.type for f in attrs.fields(attrs.resolve_types(kind))]))
        else:
            stack.extend(reversed(typing.get_args(kind)))
    return list(found)
