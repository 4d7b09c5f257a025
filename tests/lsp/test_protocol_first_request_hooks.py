"""A restarted daemon's first requests of an agent's loop find the converter's hooks built: the
daemon builds them before it says it is ready (lsp.handler_table.prepare_hooks, called by
serve_forever), not in the first `context/assemble` (issue 22, the cold assemble: cattrs
builds a class's hook the first time a process meets it, ContextAssembleParams 1.8 ms and
AssembleResult 1.7 of that request's event loop).

Counted in a fresh interpreter (the converter's dispatch is cached for the process's life),
with the daemon's modules loaded: the wire classes whose hooks cattrs writes while a first
`context/assemble`'s params are structured and its result unstructured as the typed handler
does it. Main c84769f (no preparation): 5, the params, their files, the result, its chunks and
its cache breakpoints."""

from __future__ import annotations

from tests.conftest import fresh_interpreter

PROGRAM = """
import json
import tokend.daemon.main, tokend.lsp.server, tokend.service.app
from tokend.lsp import handler_table, wire
from tokend.lsp.handlers import modules
from tokend.lsp.wire import common
from tokend.lsp.wire.assembly import AssembleResult, ChunkWire, ContextAssembleParams
prepared = getattr(handler_table, "prepare_hooks", lambda _modules: 0)(modules())
written_for = []  # the wire classes whose hooks cattrs writes from now on
for name in ("make_dict_structure_fn", "make_dict_unstructure_fn"):
    write = getattr(common, name)
    setattr(common, name, lambda cls, *a, write=write, **k: written_for.append(cls.__name__) or write(cls, *a, **k))
params = wire.from_wire(ContextAssembleParams, {
    "sessionId": "s", "format": "openai", "system": "You are a careful engineer.",
    "readOnlyFiles": [{"path": "a.py", "text": "x = 1"}], "budgetInjection": "off",
})
result = AssembleResult([], 12, [ChunkWire("history", 10)], [], ["a warning"], tools=[{"a": 1}])
written = wire.to_wire(result)
print(json.dumps({
    "prepared": prepared, "written_for": written_for, "file": params.read_only_files[0].path,
    "chunks": written["chunks"], "tokens": written["totalTokens"],
}))
"""


def test_the_first_assemble_builds_no_hook_the_daemon_could_have_built_before() -> None:
    got = fresh_interpreter(PROGRAM)
    # main c84769f: ContextAssembleParams FileParams AssembleResult ChunkWire CacheBreakpointWire
    assert got["written_for"] == [], got
    assert got["prepared"] >= 2  # the params and the result of context/assemble at least
    # the same values as without the preparation
    assert (got["file"], got["tokens"]) == ("a.py", 12)
    assert got["chunks"] == [{"name": "history", "tokens": 10}]


AGAIN = """
import json
import tokend.lsp.server
from tokend.lsp import wire
from tokend.lsp.wire import common
from tokend.lsp.wire.assembly import AssembleResult, ChunkWire
from tokend.lsp.wire.session import GatedOutputWire, SessionAppendResult
written_for = []
write = common.make_dict_unstructure_fn
common.make_dict_unstructure_fn = lambda cls, *a, **k: written_for.append(cls.__name__) or write(cls, *a, **k)
replies = []
for _ in range(2):
    replies.append(wire.to_wire(AssembleResult([], 12, [ChunkWire("history", 10)], [], [])))
    gated = [GatedOutputWire(1, "c1", "Bash", "preview", "r1", 10, 5)]
    replies.append(wire.to_wire(SessionAppendResult("m1", 3, 7, gated=gated)))
print(json.dumps({"written_for": written_for, "same": replies[:2] == replies[2:]}))
"""


def test_a_wire_class_hook_is_written_once_a_process() -> None:
    """cattrs empties its dispatch cache each time it writes a new list type's hook (an append's
    `gated` list here); the wire classes it met after that had their hooks written again (main
    c84769f: AssembleResult's twice, with a `session/append` reply between two
    `context/assemble` replies)."""
    got = fresh_interpreter(AGAIN)
    assert got["same"]
    assert sorted(got["written_for"]) == sorted(set(got["written_for"])), got["written_for"]
    assert {"AssembleResult", "ChunkWire", "SessionAppendResult"} <= set(got["written_for"])
