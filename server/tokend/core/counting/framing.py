"""The tokens a chat format adds around the text: per-message framing and tool definitions.

All figures are tokens. Message framing follows OpenAI's cookbook ("How to count tokens with
tiktoken"): every message is wrapped as <|start|>{role}<|message|>{content}<|end|>, i.e. 3 tokens
(the role is one token), +1 when the message carries a name, and the reply is primed with 3 more.
Anthropic documents no framing: ANTHROPIC_MESSAGE_OVERHEAD (~20 per message) was measured by
replaying real Claude Code sessions (claude-opus-4-6), and is also used for an unknown provider
(never under-count). What a request adds around its messages differs by Claude tokenizer family:
ctok measured count_tokens' frame around a one-message request as 7 tokens for v3, 11 for v4.7
and 6 for v4.8 (v4.7's vocabulary under a six-token frame with no word-boundary marker at its end);
a request of a v4.7 or v4.8 model is counted with its frame's difference from v3's, the family the
per-message overhead was measured in.

Tool definitions:
- OpenAI renders them into the system prompt as a TypeScript-like namespace. The community-measured
  cost (cookbook, gpt-4o family) is: per function 7 + tokens("name:description"), if it has
  properties 3, per property 3 + tokens("key:type:description"), per enum -3 + per item
  3 + tokens(item), and 12 once for the whole block (a trailing "." of a description is dropped).
- Anthropic: the tool definitions as JSON plus a fixed tool-use system prompt, documented per model:
  346 tokens for tool_choice auto/none and 313 for any/tool on Claude 4 models.
- Google: the definitions as JSON, no fixed overhead known.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokend.core.counting.media_tokens import provider_family

TOKENS_PER_MESSAGE = 3  # <|start|>{role}<|message|> ... <|end|>
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3  # <|start|>assistant<|message|> that every reply is primed with

# OpenAI tool-definition constants (gpt-4o family, community-measured).
FUNCTION_INIT = 7
PROPERTIES_INIT = 3
PROPERTY_KEY = 3
ENUM_INIT = -3
ENUM_ITEM = 3
FUNCTIONS_END = 12

# Anthropic's tool-use system prompt (Claude 4 models), by tool_choice.
ANTHROPIC_TOOL_PROMPT_AUTO = 346  # tool_choice "auto" or "none"
ANTHROPIC_TOOL_PROMPT_FORCED = 313  # tool_choice "any" or a named tool


# Anthropic documents no framing; replaying real Claude Code sessions (claude-opus-4-6) leaves
# about 20 tokens per new message (role markers, block wrappers, tool-use ids) once the text is counted.
ANTHROPIC_MESSAGE_OVERHEAD = 20


# count_tokens' frame around a one-message request, by Claude tokenizer family (ctok's measured
# message_overhead of each family's vocabulary file; v4.8's is ctok's own override).
CLAUDE_REQUEST_FRAMES: dict[str, int] = {"claude-v3": 7, "claude-v4.7": 11, "claude-v4.8": 6}
MEASURED_FAMILY = "claude-v3"  # the family ANTHROPIC_MESSAGE_OVERHEAD was measured in


def claude_frame_delta(tokenizer: str | None) -> int:
    """Tokens a request of this Claude family's model has beyond what the measured framing
    (ANTHROPIC_MESSAGE_OVERHEAD per message, measured on v3) counts: its frame less v3's
    (0 for v3 and for a model that is no Claude family)."""
    frame = CLAUDE_REQUEST_FRAMES.get(tokenizer or "")
    return 0 if frame is None else frame - CLAUDE_REQUEST_FRAMES[MEASURED_FAMILY]


def message_overhead(role: str, provider: str | None, has_name: bool = False) -> int:
    """Framing tokens one message of `role` adds around its content (not the reply priming)."""
    del role  # same framing for every role
    if provider_family(provider) == "anthropic":
        return ANTHROPIC_MESSAGE_OVERHEAD
    return TOKENS_PER_MESSAGE + (TOKENS_PER_NAME if has_name else 0)


def reply_priming(provider: str | None, tokenizer: str | None = None) -> int:
    """Tokens a request spends beyond its messages: OpenAI's reply priming
    <|start|>assistant<|message|> (3); Anthropic's measured per-message framing covers what there
    is for v3, and a later Claude family's request frame differs by claude_frame_delta."""
    if provider_family(provider) == "anthropic":
        return claude_frame_delta(tokenizer)
    return REPLY_PRIMING


# --------------------------------------------------------------------------- tool definitions


def function_of(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function part of a tool in any common shape: OpenAI {"type": "function", "function":
    {...}}, Anthropic {"name", "description", "input_schema"} or a bare {"name", "parameters"}."""
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def _schema_of(function: Mapping[str, Any]) -> Mapping[str, Any]:
    schema = function.get("parameters", function.get("input_schema"))
    return schema if isinstance(schema, Mapping) else {}


def _without_final_period(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


def _type_text(prop: Mapping[str, Any]) -> str:
    kind = prop.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    return "any"


def openai_tool_lines(tools: Sequence[Mapping[str, Any]]) -> list[tuple[int, str]]:
    """The text pieces OpenAI injects for `tools`, each with the fixed tokens it adds.

    Summing fixed + count(text) over the pieces, plus FUNCTIONS_END, gives the tools' tokens."""
    pieces: list[tuple[int, str]] = []
    for tool in tools:
        function = function_of(tool)
        name = str(function.get("name", ""))
        description = _without_final_period(str(function.get("description", "") or ""))
        pieces.append((FUNCTION_INIT, f"{name}:{description}"))
        properties = _schema_of(function).get("properties")
        if not isinstance(properties, Mapping) or not properties:
            continue
        pieces.append((PROPERTIES_INIT, ""))
        for key, prop in properties.items():
            prop = prop if isinstance(prop, Mapping) else {}
            enum = prop.get("enum")
            if isinstance(enum, list):
                pieces.append((ENUM_INIT, ""))
                pieces.extend((ENUM_ITEM, str(item)) for item in enum)
            prop_description = _without_final_period(str(prop.get("description", "") or ""))
            pieces.append((PROPERTY_KEY, f"{key}:{_type_text(prop)}:{prop_description}"))
    return pieces


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_schemas_tokens(
    tools: Sequence[Mapping[str, Any]],
    count: Callable[[str], int],
    provider: str | None,
    tool_choice: str = "auto",
) -> int:
    """Tokens the tool definitions add to a request (0 without tools).

    `count` counts the tokens of a text (the model's tokenizer or the estimate)."""
    if not tools:
        return 0
    family = provider_family(provider)
    if family == "openai":
        pieces = openai_tool_lines(tools)
        return FUNCTIONS_END + sum(fixed + (count(text) if text else 0) for fixed, text in pieces)
    definitions = count(_compact_json([function_of(tool) for tool in tools]))
    if family == "anthropic":
        forced = tool_choice not in ("auto", "none")
        return definitions + (
            ANTHROPIC_TOOL_PROMPT_FORCED if forced else ANTHROPIC_TOOL_PROMPT_AUTO
        )
    return definitions
