"""`context/assemble`'s tools in the shape of the format asked for.

A client may send its tool definitions in OpenAI's shape (Chat Completions
`{type: "function", function: {name, description, parameters}}`, or the Responses API's flat
`{type: "function", name, description, parameters}`) or in Anthropic's (`{name, description,
input_schema}`; a server tool such as `{type: "web_search_20250305", name}` has no schema). Each
is converted to the format's shape, so what is counted and returned is what that provider takes;
a definition that fits neither, or an Anthropic server tool asked for in the OpenAI format (OpenAI
has no such tool), is refused with InvalidParams naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokend.core.errors import InvalidParams

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def tools_for(fmt: str, tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """`tools` in the shape of `fmt` ("openai" or "anthropic")."""
    convert = _to_anthropic if fmt == "anthropic" else _to_openai
    return tuple(convert(i, tool) for i, tool in enumerate(tools))


def _function(i: int, tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """An OpenAI function tool's {name, description?, parameters?}, or None if not one."""
    if tool.get("type") != "function":
        return None
    inner = tool.get("function", tool)  # Chat Completions nests it; the Responses API does not
    if not isinstance(inner, Mapping) or not isinstance(inner.get("name"), str):
        raise InvalidParams(f"tools[{i}] is an OpenAI function tool without a name")
    return inner


def _to_anthropic(i: int, tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function(i, tool)
    if function is None:
        if isinstance(tool.get("name"), str) and ("input_schema" in tool or "type" in tool):
            return dict(tool)  # Anthropic's own: a client tool, or a server tool
        raise InvalidParams(_neither(i, tool))
    converted: dict[str, Any] = {"name": function["name"]}
    if isinstance(function.get("description"), str):
        converted["description"] = function["description"]
    schema = function.get("parameters")
    converted["input_schema"] = schema if isinstance(schema, Mapping) else EMPTY_SCHEMA
    return converted


def _to_openai(i: int, tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function(i, tool)
    if function is not None:
        if "function" in tool:
            return dict(tool)
        flat = {k: v for k, v in function.items() if k != "type"}  # the Responses API's
        return {"type": "function", "function": flat}
    if isinstance(tool.get("name"), str) and "input_schema" in tool:
        inner: dict[str, Any] = {"name": tool["name"]}
        if isinstance(tool.get("description"), str):
            inner["description"] = tool["description"]
        schema = tool["input_schema"]
        inner["parameters"] = schema if isinstance(schema, Mapping) else EMPTY_SCHEMA
        return {"type": "function", "function": inner}
    if isinstance(tool.get("name"), str) and isinstance(tool.get("type"), str):
        raise InvalidParams(
            f"tools[{i}] is Anthropic's server tool {tool['type']} ({tool['name']}): the OpenAI "
            'format has no such tool; leave it out, or ask for format "anthropic"'
        )
    raise InvalidParams(_neither(i, tool))


def _neither(i: int, tool: Mapping[str, Any]) -> str:
    keys = ", ".join(sorted(str(k) for k in tool)[:6]) or "no fields"
    return (
        f'tools[{i}] is neither an OpenAI function tool ({{type: "function", function: {{name, '
        f"parameters}}}}) nor an Anthropic tool ({{name, input_schema}}): it has {keys}"
    )
