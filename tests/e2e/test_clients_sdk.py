"""The provider SDKs' own response objects appended through tokend.client to the real daemon.

The objects are built offline from the SDKs' types (anthropic.types.Message, openai's
ChatCompletion and Response), as the SDKs return them; no API is called. Oracles: the usage
figures written into those objects (the gauge after the append is what the provider reported:
input + cache reads + cache writes + output), and what the daemon stored, read back on another
plain connection."""

from __future__ import annotations

from typing import Any

from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.client import Client
from tokend.client.sdk import (
    anthropic_reply,
    openai_chat_reply,
    openai_responses_reply,
    tool_result,
)
from tokend.daemon.paths import socket_path

ANTHROPIC = Message.model_validate(
    {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "content": [
            {"type": "thinking", "thinking": "look first", "signature": "sig-1"},
            {"type": "text", "text": "I will list the files."},
            {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
        ],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 48,
            "cache_read_input_tokens": 9000,
            "cache_creation_input_tokens": 2000,
            "cache_creation": {"ephemeral_1h_input_tokens": 2000, "ephemeral_5m_input_tokens": 0},
        },
    }
)
CHAT = ChatCompletion.model_validate(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_790_000_000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Listing.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "ls", "arguments": '{"path": "src"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 5000,
            "completion_tokens": 30,
            "total_tokens": 5030,
            "prompt_tokens_details": {"cached_tokens": 4096},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }
)
RESPONSES = Response.model_validate(
    {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_790_000_000,
        "model": "gpt-5",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "plan"}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_9",
                "name": "ls",
                "arguments": "{}",
                "status": "completed",
            },
        ],
        "usage": {
            "input_tokens": 7000,
            "output_tokens": 300,
            "total_tokens": 7300,
            "input_tokens_details": {"cached_tokens": 6000, "cache_write_tokens": 500},
            "output_tokens_details": {"reasoning_tokens": 200},
        },
    }
)


def _stored(sid: str) -> list[dict[str, Any]]:
    other = LspClient.initialized(socket_path(), "observer")
    try:
        return list(other.result("session/messages", {"sessionId": sid})["messages"])
    finally:
        other.close()


def _turn(tokend: Client, model: str, reply: Any) -> tuple[str, dict[str, Any]]:
    sid = tokend.create_session(model)
    tokend.append(sid, "user", [{"type": "text", "text": "list the files"}])
    tokend.append(sid, "assistant", reply.parts, usage=reply.usage, message_id=reply.id)
    results = [tool_result(c["callId"], c["name"], "a.py\nb.py") for c in reply.tool_calls]
    snapshot = tokend.snapshot(sid)
    tokend.append(sid, "tool", results)
    return sid, snapshot


def test_the_sdks_replies_are_appended_as_the_provider_reported_them(monkeypatch, tmp_path):
    with (
        real_daemons(monkeypatch),
        Client.connect("agent", workspace_uri=tmp_path.as_uri()) as tokend,
    ):
        claude = anthropic_reply(ANTHROPIC)
        sid, snapshot = _turn(tokend, "claude-sonnet-4-5", claude)
        assert snapshot["usedTokens"] == 12 + 9000 + 2000 + 48
        assert snapshot["lastCall"]["cacheWriteTokens"] == 2000
        stored = _stored(sid)
        assert [m["role"] for m in stored] == ["user", "assistant", "tool"]
        kinds = [p["type"] for p in stored[1]["parts"]]
        assert kinds == ["reasoning", "text", "toolCall"]
        assert stored[1]["parts"][2]["input"] == {"path": "."}
        assert stored[2]["parts"][0]["callId"] == "toolu_1"
        # the thinking block goes back to Anthropic signed, as the API requires
        request = tokend.assemble(sid, format="anthropic")
        thinking = request["messages"][1]["content"][0]
        assert thinking == {"type": "thinking", "thinking": "look first", "signature": "sig-1"}

        chat = openai_chat_reply(CHAT)
        sid, snapshot = _turn(tokend, "gpt-4o", chat)
        assert chat.usage["inputTokens"] == 5000 - 4096  # OpenAI counts cached input inside
        assert snapshot["usedTokens"] == 5000 + 30
        assert _stored(sid)[1]["parts"][1]["input"] == {"path": "src"}

        responses = openai_responses_reply(RESPONSES)
        sid, snapshot = _turn(tokend, "gpt-5", responses)
        # gpt-5's reasoning is not sent back to it: the next request holds 7,300 - 200
        assert snapshot["usedTokens"] == 7000 + 300 - 200
        assert responses.usage["inputTokens"] == 7000 - 6000 - 500
        assert snapshot["lastCall"]["cacheWriteTokens"] == 500
        assert snapshot["lastCall"]["reasoningTokens"] == 200
        assert [c["callId"] for c in responses.tool_calls] == ["call_9"]
