"""Context awareness in context/assemble, on a real SQLite file: the model's budget is told in
the wording it was trained on (native) or in one note (synthetic), with the gauge's figures,
after the cached prefix (checked on the rendered request)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tokend.adapters.store import SqlStore
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_settings import WorkspaceSettings
from tokend.core.assembly.budget_injection import ContextConfig
from tokend.core.errors import InvalidParams
from tokend.core.settings.config import merge_config
from tokend.core.settings.tables import TokendConfig
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
from tokend.service.app import build_service
from tokend.service.service import TokendService

TOOLS = [
    {
        "name": "bash",
        "description": "Run a shell command",
        "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    }
]
SYSTEM = "You are a careful engineer. Read before you edit."


def make_service(tmp_path, config: TokendConfig | None = None) -> TokendService:
    catalog = WorkspaceSettings().for_workspace(None).catalog
    store = SqlStore.open(f"sqlite:///{tmp_path}/t.sqlite3")
    return build_service(store, catalog, config or TokendConfig())


def tool_session(service: TokendService, model: str, turns: int = 3) -> str:
    """A session whose request ends with a tool result (the turn in progress)."""
    sid = service.sessions.create_session(model).id
    for i in range(turns):
        append(service, sid, "user", [TextPart(f"step {i}: check the build log")])
        append(
            service,
            sid,
            "assistant",
            [ToolCallPart(f"c{i}", "bash", {"cmd": f"make {i}"})],
            usage=Usage(input_tokens=5, output_tokens=40, cache_read_tokens=12_000 + i),
        )
        append(service, sid, "tool", [ToolResultPart(f"c{i}", "bash", f"make: step {i} ok\n" * 40)])
    return sid


def request_body(assembly: Any) -> dict[str, Any]:
    """The Messages API body a client sends."""
    body: dict[str, Any] = {"messages": list(assembly.messages)}
    if assembly.system is not None:
        body["system"] = list(assembly.system)
    if assembly.tools:
        body["tools"] = list(assembly.tools)
    return body


def cached_prefixes(body: dict[str, Any]) -> list[bytes]:
    """The rendered bytes of every cached prefix of an Anthropic request: tools, system, then
    the messages up to each block marked cache_control (Anthropic's cache order)."""
    head = {"tools": body.get("tools", []), "system": body.get("system", [])}
    prefixes = [json.dumps(head, sort_keys=True).encode()]
    for index, message in enumerate(body["messages"]):
        content = message["content"]
        if not isinstance(content, list):
            continue
        for block_index, block in enumerate(content):
            if "cache_control" in block:
                upto = [
                    *body["messages"][:index],
                    {**message, "content": content[: block_index + 1]},
                ]
                prefixes.append(json.dumps({**head, "messages": upto}, sort_keys=True).encode())
    return prefixes


def test_native_model_gets_the_trained_tags_after_its_tool_results(tmp_path):
    config = TokendConfig(context=ContextConfig(budget_injection="auto"))
    service = make_service(tmp_path, config)
    sid = tool_session(service, "claude-sonnet-4-5")
    assembly = assemble_context(service, sid, AssembleInput(format="anthropic", system=SYSTEM))
    snap = service.sessions.snapshot(sid)
    last = assembly.messages[-1]
    assert last["role"] == "user"
    kinds = [b["type"] for b in last["content"]]
    assert kinds == ["tool_result", "text"]  # the warning follows the tool results
    # Oracle: Anthropic's documented wording, filled with the gauge's own figures.
    window = 200_000
    assert snap.context_window == window
    expected = (
        f"<budget:token_budget>{window}</budget:token_budget>\n"
        f"<system_warning>Token usage: {snap.used_tokens}/{window}; "
        f"{window - snap.used_tokens} remaining</system_warning>"
    )
    assert last["content"][-1]["text"] == expected
    # The gauge is anchored on the provider's last figure: at least what it reported.
    assert snap.used_tokens >= 12_002 + 5 + 40
    chunks = dict(assembly.chunks)
    assert chunks["budget"] > 0 and sum(chunks.values()) == assembly.total_tokens


def test_non_native_model_gets_one_note_with_the_compaction_point(tmp_path):
    config = TokendConfig(context=ContextConfig(budget_injection="auto"))
    service = make_service(tmp_path, config)
    sid = tool_session(service, "claude-opus-4-5")
    assembly = assemble_context(service, sid, AssembleInput(format="anthropic", system=SYSTEM))
    snap = service.sessions.snapshot(sid)
    text = assembly.messages[-1]["content"][-1]["text"]
    assert "<budget:" not in text and "<system_warning>" not in text
    assert f"{snap.used_tokens:,} of {snap.context_window:,} tokens used" in text
    assert f"{snap.remaining_tokens:,} remaining" in text
    assert f"compacted automatically at {snap.autocompact_threshold:,} tokens" in text
    assert f"({snap.autocompact_threshold - snap.used_tokens:,} from now)" in text


def test_the_cached_prefix_is_byte_identical_with_and_without_the_injection(tmp_path):
    service = make_service(tmp_path)
    sid = tool_session(service, "claude-sonnet-4-5", turns=4)
    bodies = {}
    for mode in ("off", "native", "synthetic"):
        inp = AssembleInput(format="anthropic", system=SYSTEM, tools=TOOLS, budget_injection=mode)
        bodies[mode] = request_body(assemble_context(service, sid, inp))
    off = cached_prefixes(bodies["off"])
    assert len(off) >= 2  # tools + system, and the history's breakpoint
    for mode in ("native", "synthetic"):
        assert cached_prefixes(bodies[mode]) == off
        assert bodies[mode] != bodies["off"]  # the injection is there, after the prefix


def test_openai_totals_stay_tiktokens_count_with_the_note(tmp_path):
    service = make_service(tmp_path)
    sid = tool_session(service, "gpt-4o")
    off = assemble_context(service, sid, AssembleInput(system=SYSTEM, budget_injection="off"))
    on = assemble_context(service, sid, AssembleInput(system=SYSTEM, budget_injection="synthetic"))
    assert on.messages[: len(off.messages)] == off.messages  # nothing before it moved
    note = on.messages[-1]
    assert note["role"] == "system" and len(on.messages) == len(off.messages) + 1
    enc = load_encoding("o200k_base")
    # Oracle: tiktoken's count of the note plus OpenAI's 3 tokens of framing per message.
    assert on.total_tokens - off.total_tokens == len(enc.encode(note["content"])) + 3
    assert dict(on.chunks)["budget"] == len(enc.encode(note["content"])) + 3
    assert "budget" not in dict(off.chunks)


def test_the_default_is_the_setting_and_a_request_overrides_it(tmp_path):
    service = make_service(tmp_path)  # [context] budget_injection defaults to "off"
    sid = tool_session(service, "claude-sonnet-4-5")
    plain = assemble_context(service, sid, AssembleInput(format="anthropic"))
    assert "budget" not in dict(plain.chunks)
    asked = assemble_context(
        service, sid, AssembleInput(format="anthropic", budget_injection="native")
    )
    assert "<budget:token_budget>" in asked.messages[-1]["content"][-1]["text"]
    with pytest.raises(InvalidParams, match="budgetInjection"):
        assemble_context(service, sid, AssembleInput(budget_injection="loud"))


def test_the_native_flag_comes_from_the_catalog_and_config_overrides_it():
    config, warnings = merge_config(
        TokendConfig(),
        {
            "models": {"gpt-4o": {"native_budget_injection": True}},
            "context": {"budget_injection": "auto"},
        },
        {"context": {"budget_injection": "sometimes"}},
    )
    assert config.context.budget_injection == "auto"
    assert any("budget_injection = 'sometimes' is invalid" in w for w in warnings)
    catalog = WorkspaceSettings().for_workspace(None).catalog
    native = {
        name: catalog.get(name).native_budget_injection
        for name in (
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-6",
            "claude-haiku-4-5",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "claude-opus-4-6",
            "claude-opus-4-5",
            "gpt-4o",
        )
    }
    assert native == {
        "claude-sonnet-4-5-20250929": True,
        "claude-sonnet-4-6": True,
        "claude-haiku-4-5": True,
        "anthropic.claude-sonnet-4-5-20250929-v1:0": True,
        "claude-opus-4-6": False,
        "claude-opus-4-5": False,
        "gpt-4o": False,
    }
    from tokend.core.models.catalog import Catalog

    overridden = Catalog(
        {}, [{"my-model": {"context_window": 100_000, "native_budget_injection": True}}]
    )
    assert overridden.get("my-model").native_budget_injection
