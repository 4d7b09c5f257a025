"""The `context/assemble` result as JSON text, joined from the render cache's text of each
message a warm session already wrote (core.render_cache.RenderCache.json_text): a reply of
10,000 messages costs their join, not encoding 2.6 MB of objects again. The text is what
`json.dumps(result)` writes (the connection sends it as it is: lsp.wire.JsonText)."""

from __future__ import annotations

import json
from typing import Any

from tokend.core.assemble import Assembly
from tokend.core.render_cache import RenderCache
from tokend.lsp.wire import JsonText


def assemble_result(assembly: Assembly) -> dict[str, Any]:
    """The result as objects (protocol.md, context/assemble), its keys in the order sent."""
    result: dict[str, Any] = {
        "messages": list(assembly.messages),
        "totalTokens": assembly.total_tokens,
        "chunks": [{"name": n, "tokens": t} for n, t in assembly.chunks],
        "cacheBreakpoints": [
            {"chunk": b.chunk, "messageIndex": b.message_index} for b in assembly.cache_breakpoints
        ],
        "warnings": list(assembly.warnings),
    }
    if assembly.system is not None:
        result["system"] = list(assembly.system)
    if assembly.tools:
        result["tools"] = list(assembly.tools)
    for key, value in assembly.extras:  # contextManagement, outputConfig
        result[key] = value
    if assembly.betas:
        result["betas"] = list(assembly.betas)
    return result


def assemble_text(assembly: Assembly, cache: RenderCache) -> JsonText | dict[str, Any]:
    """The result as `json.dumps` writes it, each message's text from `cache` where it holds
    it (call it beside the loop). A result holding NaN or Infinity is given back as objects,
    for the connection to refuse as it refuses any such reply."""
    result = assemble_result(assembly)
    pieces = ["{"]
    try:
        for key, value in result.items():
            if len(pieces) > 1:
                pieces.append(", ")
            pieces.append(json.dumps(key) + ": ")
            if key == "messages":
                pieces.append(cache.join_json(value))
            else:
                pieces.append(json.dumps(value, allow_nan=False))
    except ValueError:
        return result
    pieces.append("}")
    return JsonText("".join(pieces))
