"""Found (issue 22): the first `context/assemble` after a restart waited for the tokenizer's
vocabulary to load (o200k: 300 to 850 ms on the shared machine, most of a cold assemble), only
to count the request's system prompt and the pruned results' placeholder again: short texts
whose counts the store did not keep. What every request repeats (system prompt, tools,
examples, files, repo map, reminder, the placeholder) now has its count kept in the store
whatever its length (ModelCounter.count_kept); a restarted daemon finds them there.

Oracles: the vocabulary loads, counted (tokend.adapters.tokenizers.load_encoding), and the
assembly before the restart (the same messages and figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tokend.adapters import tokenizers
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import open_service

SYSTEM = "You are a careful engineer."
TOOLS = [{"type": "function", "function": {"name": "Bash", "parameters": {"type": "object"}}}]


def test_the_first_assembly_after_a_restart_loads_no_vocabulary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'cold.sqlite3'}"
    inp = AssembleInput(format="openai", system=SYSTEM, tools=TOOLS, reminder="Run the tests.")
    service = open_service(None, url)
    try:
        sid = service.sessions.create_session("gpt-4o", context_window=1_000_000).id
        for i in range(4):
            append(service, sid, "user", [TextPart(f"step {i}: make the test pass")])
            usage = Usage(input_tokens=40, output_tokens=25, cache_read_tokens=900 + 30 * i)
            call = [ToolCallPart(f"c{i}", "Bash", {"n": i})]
            append(service, sid, "assistant", call, usage=usage, model="gpt-4o")
            append(service, sid, "tool", [ToolResultPart(f"c{i}", "Bash", f"ok {i}\n" * 40)])
        data = service.sessions.state(sid).data
        results = [sp.id for m in data.messages for sp in m.parts if m.role == "tool"]
        service.sessions.state(sid).apply(
            service.changes.prune_change(data, results[:2])
        )  # placeholders
        before = assemble_context(service, sid, inp)
    finally:
        service.close()
    loads: list[str] = []
    real = tokenizers.load_encoding

    def load(name: str):
        loads.append(name)
        return real(name)

    monkeypatch.setattr(tokenizers, "load_encoding", load)
    service = open_service(None, url)  # a restart: nothing of the session in memory
    try:
        after = assemble_context(service, sid, inp)
        assert loads == []  # main: ["o200k_base"], for the system prompt's count
        assert after.messages == before.messages and after.total_tokens == before.total_tokens
        assert after.chunks == before.chunks
        append(service, sid, "user", [TextPart("the next step")])  # counting still works
        assert set(loads) == {"o200k_base"}
    finally:
        service.close()
