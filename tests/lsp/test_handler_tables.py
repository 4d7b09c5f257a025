"""Typed handlers (lsp/handler_table.py): each feature module's FEATURES table maps a method to
a top-level function `(ls, params: X) -> Y` whose X and Y are wire classes, and the params are
structured into X in one step before the handler runs: a wrong JSON type is refused with the
documented -32602, naming the field, and the handler never sees it."""

from __future__ import annotations

import inspect
import typing

import attrs
import pytest
from pygls.exceptions import JsonRpcException

from tokend.lsp import handlers
from tokend.lsp.handler_table import typed
from tokend.lsp.server import TokendServer

TABLES = {m.__name__: m.FEATURES for m in handlers.modules() if hasattr(m, "FEATURES")}


def test_every_table_holds_top_level_handlers_of_wire_types() -> None:
    assert len(TABLES) >= 5  # budget, admin, history, follow, checkpoints
    for module_name, table in TABLES.items():
        module = __import__(module_name, fromlist=["_"])
        for method, feature in table.items():
            handler = inspect.unwrap(feature).__wrapped_handler__
            assert getattr(module, handler.__name__) is handler, method  # top-level
            hints = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})
            assert attrs.has(hints["params"]), f"{method}: params typed {hints['params']}"
            assert attrs.has(hints["return"]), f"{method}: result typed {hints['return']}"


@attrs.frozen
class _Params:
    session_id: str


@attrs.frozen
class _Result:
    session_id: str


def test_a_wrong_json_type_is_refused_before_the_handler_runs() -> None:
    seen: list[_Params] = []

    def handler(ls: TokendServer, params: _Params) -> _Result:
        seen.append(params)
        return _Result(params.session_id)

    feature = typed(handler)
    assert feature(None, {"sessionId": "s1"}) == {"sessionId": "s1"}  # camelCase, from the class
    with pytest.raises(JsonRpcException) as refused:
        feature(None, {"sessionId": 5})
    assert refused.value.code == -32602
    assert refused.value.message == "invalid params: sessionId must be a string, not an integer"
    assert [p.session_id for p in seen] == ["s1"]
