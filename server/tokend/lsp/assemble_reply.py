"""The `context/assemble` result (lsp/wire/assembly.py) as JSON text, joined from the render
cache's text of each message a warm session already wrote (core.assembly.render_cache.RenderCache
.json_text): a reply of 10,000 messages costs their join, not encoding 2.6 MB of objects again.
The bytes are what `json.dumps(to_wire(result)).encode()` writes, in pieces the connection
joins into the reply's frame (lsp.wire.JsonBytes)."""

from __future__ import annotations

import json

from tokend.core.assembly.assemble import Assembly
from tokend.core.assembly.render_cache import RenderCache
from tokend.lsp.wire import JsonBytes, to_wire
from tokend.lsp.wire.assembly import AssembleResult, CacheBreakpointWire, ChunkWire


def to_wire_assembly(assembly: Assembly, *, messages: bool = True) -> AssembleResult:
    """The result (protocol.md, context/assemble); its messages left out unless `messages`."""
    return AssembleResult(
        list(assembly.messages) if messages else [],
        assembly.total_tokens,
        [ChunkWire(n, t) for n, t in assembly.chunks],
        [CacheBreakpointWire(b.chunk, b.message_index) for b in assembly.cache_breakpoints],
        list(assembly.warnings),
        system=list(assembly.system) if assembly.system is not None else None,
        tools=list(assembly.tools) or None,
        request_fields=dict(assembly.extras),  # contextManagement, outputConfig
        betas=list(assembly.betas) or None,
    )


def assemble_text(assembly: Assembly, cache: RenderCache) -> JsonBytes | AssembleResult:
    """The result as `json.dumps` writes it, in pieces of bytes: the messages' from `cache`
    (kept while they are the same), the rest written here (call it beside the loop). A result
    holding NaN or Infinity is given back as the wire class, for the connection to refuse as
    it refuses any such reply."""
    pieces: list[bytes] = []
    text = ["{"]
    try:
        for key, value in to_wire(to_wire_assembly(assembly, messages=False)).items():
            if len(text) > 1 or pieces:
                text.append(", ")
            text.append(json.dumps(key) + ": ")
            if key == "messages":
                pieces.append("".join(text).encode())
                pieces.append(cache.join_json_bytes(assembly.messages))
                text = []
            else:
                text.append(json.dumps(value, allow_nan=False))
    except ValueError:
        return to_wire_assembly(assembly)
    text.append("}")
    pieces.append("".join(text).encode())
    return JsonBytes(pieces)
