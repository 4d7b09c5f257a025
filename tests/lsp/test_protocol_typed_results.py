"""Results are typed down to their leaves: no field of a result's wire class (nor of the wire
classes inside it) is `Any`, except where protocol.md says the value is the client's or the
provider's own JSON, and the debt listed below. A dict passed through the layers (as daemon/status's
host part was, until the host reported a typed lsp.host.HostStatus) fails here."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import attrs

from tokend.lsp import handlers
from tokend.lsp.server import TokendServer

FREE_FORM = {
    "ToolCallPartWire.input",  # a tool call's input: any JSON (protocol.md, Part)
    "ReasoningPartWire.provider_metadata",  # kept and returned untouched
    # context/assemble's request: the provider's own shapes (messages, system, tools, fields)
    "AssembleResult.messages",
    "AssembleResult.system",
    "AssembleResult.tools",
    "AssembleResult.request_fields",
}
DEBT = {
    # a restore's journaled outcome, read back as JSON (service.checkpoints.restore_journal)
    "InterruptedWire.finished",
    "InterruptedWire.already_done",
    "InterruptedWire.kept",
    "InterruptedWire.temporaries_removed",
    "InterruptedWire.conversation",
    "InterruptedWire.error",
}


def _untyped_fields(tp: Any, seen: set[type], found: set[str], where: str) -> None:
    if tp is Any:
        found.add(where)
        return
    if attrs.has(tp):
        if tp in seen:
            return
        seen.add(tp)
        hints = typing.get_type_hints(tp)
        for field in attrs.fields(tp):
            _untyped_fields(hints[field.name], seen, found, f"{tp.__name__}.{field.name}")
        return
    for arg in typing.get_args(tp):  # list[X], X | None, dict[str, X]
        _untyped_fields(arg, seen, found, where)


def _results() -> dict[str, Any]:
    found = {}
    for module in handlers.modules():
        for method, feature in getattr(module, "FEATURES", {}).items():
            handler = inspect.unwrap(feature).__wrapped_handler__
            hints = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})
            found[method] = hints["return"]
    return found


def test_no_result_carries_an_untyped_field_but_the_documented_free_form_json() -> None:
    results = _results()
    assert "daemon/status" in results and len(results) >= 30
    found: set[str] = set()
    seen: set[type] = set()
    for method, result in results.items():
        _untyped_fields(result, seen, found, method)
    assert found - FREE_FORM - DEBT == set()
    assert DEBT <= found, "debt paid: take it off the list"
