"""The tool-output gates follow the workspace's [tool_output] settings."""

from __future__ import annotations

from tests.appending import append
from tokend.core.types import ToolCallPart, ToolResultPart
from tokend.service.app import open_service


def test_a_workspace_lowers_the_gate_and_exempts_its_own_read_tool(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".tokend.toml").write_text(
        '[tool_output]\nsingle_result_chars = 1000\npreview_chars = 100\nexempt_tools = ["cat"]\n'
    )
    service = open_service(None, f"sqlite:///{tmp_path}/s.sqlite3")
    sid = service.sessions.create_session("gpt-4o", workspace_uri=ws.as_uri()).id
    append(service, sid, "assistant", [ToolCallPart("a", "bash", {}), ToolCallPart("b", "cat", {})])
    output = "x" * 5000
    append(
        service,
        sid,
        "tool",
        [ToolResultPart("a", "bash", output), ToolResultPart("b", "cat", output)],
    )
    stored = service.store.messages.load_all_messages(sid)[-1].parts
    bash, cat = stored[0].part, stored[1].part
    assert isinstance(bash, ToolResultPart) and isinstance(cat, ToolResultPart)
    assert len(bash.output) < 1000 and bash.output.startswith("x" * 100)  # gated by the workspace
    assert cat.output == output  # its read tool is exempt
    service.close()


def test_a_bad_value_is_reported_and_the_default_kept(tmp_path):
    from tokend.core.settings.config import merge_config
    from tokend.core.settings.tables import TokendConfig

    config, warnings = merge_config(
        TokendConfig(), {}, {"tool_output": {"single_result_chars": "big"}}
    )
    assert config.tool_output.single_result_chars == 50_000
    assert any("single_result_chars" in w for w in warnings)
