"""Typed handlers (lsp/handler_table.py): every method a connection's server answers is a
top-level function `(ls, params: X) -> Y`, listed in its feature module's table
(lsp/handlers/<feature>.py: FEATURES, NOTIFICATIONS; lsp/server.py: LIFECYCLE), with no `Any` in
its signature: X is a wire class (or lsprotocol's type, for LSP's own notifications), Y a wire
class, None or JSON text. The params are structured into X in one step before the handler runs:
a wrong JSON type is refused with the documented -32602, naming the field, and the handler never
sees it. These tests hold that shape, so that closures typed `Any -> Any` do not grow back."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

import attrs
import pytest
from pygls.exceptions import JsonRpcException

from tokend.lsp import handlers, server
from tokend.lsp.handler_table import typed
from tokend.lsp.server import TokendServer, create_server
from tokend.lsp.wire import JsonBytes, JsonText

HANDLERS = Path(handlers.__file__).parent


class _Usage:
    def subscribe_notices(self, notice: object) -> None:
        return None


def _registered() -> dict[str, Any]:
    """What pygls calls for each method of a freshly built server: the handler itself (for a
    typed one, the function its table wraps)."""
    app: Any = types.SimpleNamespace(service=None, usage=_Usage(), optional_checkpoints=None)
    built = create_server(app)
    found = {}
    for method, feature in built.protocol.fm.features.items():
        feature = feature.func  # pygls's partial (or coroutine) passing the server first
        feature = inspect.unwrap(feature)  # rpc's wraps
        found[method] = getattr(feature, "__wrapped_handler__", feature)
    built.release()
    return found


def _mentions_any(tp: Any) -> bool:
    """Whether a signature's type is Any, or a union or JSON text holding Any at its top."""
    if tp is Any:
        return True
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return any(_mentions_any(arg) for arg in typing.get_args(tp))
    return False


def _wire_result(tp: Any) -> bool:
    if tp is type(None) or tp is JsonText or tp is JsonBytes or attrs.has(tp):
        return True
    if isinstance(tp, types.UnionType):
        return all(_wire_result(arg) for arg in typing.get_args(tp))
    return False


def test_every_method_is_answered_by_a_top_level_handler_typed_without_any() -> None:
    registered = _registered()
    assert len(registered) >= 39  # today 30 requests, 6 notifications, the lifecycle's 3
    for method, handler in registered.items():
        module = inspect.getmodule(handler)
        assert module is not None, method
        assert "<locals>" not in handler.__qualname__, f"{method}: defined inside a function"
        assert getattr(module, handler.__name__) is handler, f"{method}: not top-level"
        hints = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})
        params = list(inspect.signature(handler).parameters)
        assert params == ["ls", "params"], f"{method}: takes {params}"
        assert hints.get("ls") is TokendServer, method
        for name in ("params", "return"):
            assert name in hints, f"{method}: {name} not annotated"
            assert not _mentions_any(hints[name]), f"{method}: {name} typed {hints[name]}"


def test_every_typed_handler_takes_a_wire_class_and_answers_one() -> None:
    tables = [m.FEATURES for m in handlers.modules() if hasattr(m, "FEATURES")]
    assert sum(len(t) for t in tables) >= 30  # every request tokend answers today
    for table in tables:
        for method, feature in table.items():
            handler = inspect.unwrap(feature).__wrapped_handler__
            hints = typing.get_type_hints(handler, localns={"TokendServer": TokendServer})
            assert attrs.has(hints["params"]), f"{method}: params typed {hints['params']}"
            assert _wire_result(hints["return"]), f"{method}: result typed {hints['return']}"


def _create_server_source() -> ast.Module:
    return ast.parse(textwrap.dedent(inspect.getsource(server.create_server)))


@pytest.mark.parametrize(
    "path", [*sorted(HANDLERS.glob("*.py")), None], ids=lambda p: p.name if p else "create_server"
)
def test_no_handler_module_registers_a_function_of_its_own(path: Path | None) -> None:
    """Read from the source (the registered table above sees only what is registered): no
    `register()` hook, no `@x.feature(...)` decorator, no function defined inside another
    that takes `(ls, params)` (the shape the closures inside `register()` had)."""
    tree = ast.parse(path.read_text()) if path is not None else _create_server_source()
    name = path.name if path is not None else "create_server"
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.name != "register", f"{name}: register() is back"
            for decorator in node.decorator_list:
                call = decorator.func if isinstance(decorator, ast.Call) else decorator
                assert not (isinstance(call, ast.Attribute) and call.attr == "feature"), (
                    f"{name}:{node.lineno}: {node.name} registered by a decorator"
                )
            for inner in ast.walk(node):
                if inner is node or not isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                names = [a.arg for a in inner.args.args]
                assert names[:2] != ["ls", "params"], (
                    f"{name}:{inner.lineno}: handler {inner.name} inside {node.name}"
                )


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
