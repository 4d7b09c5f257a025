"""Issue 21 through tokend's server (in the test's process, tests/in_process.py; SQLite): Anthropic's context
editing and task budgets. The agent here is the test: it asks `context/assemble`, sends what came
back to a real HTTP server on 127.0.0.1 standing in for Anthropic's Messages API, and appends the
reply through tokend.client.sdk. Oracles: the request shape Anthropic documents (written out
below from its context editing and task budgets pages, not from tokend), the figures the stand-in
reported, and tiktoken's o200k count the stand-in bills with."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest

from tests.daemon.real_daemon import real_daemons
from tests.lsp_client import LspClient
from tokend.adapters.tokenizers import load_encoding
from tokend.client.sdk import anthropic_reply

# Anthropic's documented shapes (context editing page: the edits and their options; task
# budgets page: output_config.task_budget). Keys -> the JSON types a value may have.
CLEAR_TOOL_USES = {
    "type": str,
    "trigger": dict,
    "keep": dict,
    "clear_at_least": dict,
    "exclude_tools": list,
    "clear_tool_inputs": bool,
}
CLEAR_THINKING = {"type": str, "keep": (dict, str)}
TOKENS = load_encoding("o200k_base")  # tiktoken's o200k, from the packaged file


def _documented_edit(edit: dict[str, Any]) -> None:
    """One edit as Anthropic's context editing page describes it (raises AssertionError)."""
    shape = {"clear_tool_uses_20250919": CLEAR_TOOL_USES, "clear_thinking_20251015": CLEAR_THINKING}
    assert edit["type"] in shape, edit
    allowed = shape[edit["type"]]
    assert set(edit) <= set(allowed), edit
    for key, value in edit.items():
        assert isinstance(value, allowed[key]), (key, value)
    for key in ("trigger", "clear_at_least"):
        if key in edit:
            assert edit[key]["type"] == "input_tokens" and edit[key]["value"] > 0, edit
    if edit["type"] == "clear_tool_uses_20250919" and "keep" in edit:
        assert edit["keep"]["type"] == "tool_uses" and edit["keep"]["value"] >= 0
    if edit["type"] == "clear_thinking_20251015" and isinstance(edit["keep"], dict):
        assert edit["keep"]["type"] == "thinking_turns" and edit["keep"]["value"] >= 1
    if edit["type"] == "clear_thinking_20251015" and isinstance(edit["keep"], str):
        assert edit["keep"] == "all"
    if "exclude_tools" in edit:
        assert all(isinstance(name, str) for name in edit["exclude_tools"])


class StandIn:
    """Anthropic's Messages API as far as this test needs it: it checks the request, applies
    clear_tool_uses_20250919 as the context editing page describes it (past `trigger` input
    tokens, the oldest tool results go, the newest `keep` tool uses stay, tools named in
    `exclude_tools` are never cleared, nothing unless `clear_at_least` is reached), bills the
    input with o200k, and answers with the next scripted content."""

    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = script
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.replies: list[dict[str, Any]] = []

    def answer(self, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((headers, body))
        assert isinstance(body["messages"], list) and body["max_tokens"] > 0
        usage: dict[str, Any] = {"input_tokens": 0, "output_tokens": 20}
        cleared, uses = 0, 0
        management = body.get("context_management")
        full = len(TOKENS.encode(json.dumps(body["messages"])))
        if management is not None:
            assert "context-management-2025-06-27" in headers.get("anthropic-beta", "")
            assert set(management) == {"edits"}
            for edit in management["edits"]:
                _documented_edit(edit)
                if edit["type"] == "clear_tool_uses_20250919":
                    cleared, uses = self._clear(body["messages"], edit, full)
        if "output_config" in body:  # the task budgets page: {type: "tokens", total, remaining?}
            assert "task-budgets-2026-03-13" in headers.get("anthropic-beta", "")
            budget = body["output_config"]["task_budget"]
            assert set(budget) <= {"type", "total", "remaining"} and budget["type"] == "tokens"
            assert 0 <= budget.get("remaining", budget["total"]) <= budget["total"]
        usage["input_tokens"] = full - cleared
        reply: dict[str, Any] = {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": self.script[len(self.requests) - 1],
            "usage": usage,
        }
        if uses:
            edit = {"type": "clear_tool_uses_20250919", "cleared_tool_uses": uses}
            reply["context_management"] = {
                "applied_edits": [{**edit, "cleared_input_tokens": cleared}]
            }
        self.replies.append(reply)
        return reply

    @staticmethod
    def _clear(messages: list[dict[str, Any]], edit: dict[str, Any], full: int) -> tuple[int, int]:
        trigger = edit.get("trigger", {"value": 100_000})["value"]
        keep = edit.get("keep", {"value": 3})["value"]
        if full <= trigger:
            return 0, 0
        names = {
            b["id"]: b["name"]
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }
        results = [
            b
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
            and names.get(b["tool_use_id"]) not in edit.get("exclude_tools", [])
        ]
        gone = results[: max(0, len(results) - keep)]
        tokens = sum(len(TOKENS.encode(json.dumps(b["content"]))) for b in gone)
        if tokens < edit.get("clear_at_least", {"value": 0})["value"]:
            return 0, 0
        return tokens, len(gone)


@contextmanager
def stand_in(script: list[list[dict[str, Any]]]) -> Iterator[tuple[StandIn, str]]:
    api = StandIn(script)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            assert self.path == "/v1/messages"
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                out = json.dumps(api.answer(headers, body)).encode()
                self.send_response(200)
            except AssertionError as problem:  # a request Anthropic would refuse
                out = json.dumps({"type": "error", "error": {"message": str(problem)}}).encode()
                self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _user_config(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "tokend" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _send(base: str, model: str, assembled: dict[str, Any]) -> dict[str, Any]:
    """The agent's call: the assembled request, as Anthropic's Messages API takes it."""
    body: dict[str, Any] = {"model": model, "max_tokens": 1024, "messages": assembled["messages"]}
    if "system" in assembled:
        body["system"] = assembled["system"]
    if "contextManagement" in assembled:
        body["context_management"] = assembled["contextManagement"]
    if "outputConfig" in assembled:
        body["output_config"] = assembled["outputConfig"]
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if assembled.get("betas"):
        headers["anthropic-beta"] = ",".join(assembled["betas"])
    request = Request(f"{base}/v1/messages", json.dumps(body).encode(), headers, method="POST")
    with urlopen(request, timeout=10) as response:
        reply: dict[str, Any] = json.loads(response.read())
    return reply


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


def _session(client: LspClient, model: str) -> str:
    created = _ok(client.request("session/create", {"model": model}))
    sid: str = created["sessionId"]
    return sid


def _append(client: LspClient, sid: str, message: dict[str, Any]) -> dict[str, Any]:
    return _ok(client.request("session/append", {"sessionId": sid, "message": message}))


def test_assemble_sends_anthropics_edits_with_the_sessions_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`[context_editing]` on: an Anthropic request carries `context_management` with the
    settings' values, in the shape Anthropic documents, and the beta header it needs; a model
    Anthropic does not list, or the OpenAI format, gets no edit and a warning that says why."""
    _user_config(
        "[context_editing]\nenabled = true\ntrigger_tokens = 30000\nkeep_tool_uses = 5\n"
        'clear_at_least_tokens = 5000\nexclude_tools = ["web_search"]\n'
        "keep_thinking_turns = 2\n"
    )
    with real_daemons(monkeypatch) as daemons:
        client = daemons.standalone()
        assert "result" in client.initialize("context editing")
        sid = _session(client, "claude-sonnet-4-6")
        _append(client, sid, {"role": "user", "parts": [{"type": "text", "text": "hello"}]})
        got = _ok(client.request("context/assemble", {"sessionId": sid, "format": "anthropic"}))
        edits = got["contextManagement"]["edits"]
        for edit in edits:
            _documented_edit(edit)
        assert edits == [
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 30_000},
                "keep": {"type": "tool_uses", "value": 5},
                "clear_at_least": {"type": "input_tokens", "value": 5_000},
                "exclude_tools": ["web_search"],
            },
        ]
        assert got["betas"] == ["context-management-2025-06-27"]
        assert not any("context editing" in w for w in got["warnings"])
        # asked off by the request: nothing sent
        off = {"sessionId": sid, "format": "anthropic", "contextEditing": False}
        assert "contextManagement" not in _ok(client.request("context/assemble", off))
        # the OpenAI format has no such field
        got = _ok(client.request("context/assemble", {"sessionId": sid, "format": "openai"}))
        assert "contextManagement" not in got
        assert any("context editing not sent" in w and "openai" in w for w in got["warnings"])
        # a model Anthropic does not list
        other = _session(client, "gpt-4o")
        _append(client, other, {"role": "user", "parts": [{"type": "text", "text": "hello"}]})
        asked = {"sessionId": other, "format": "anthropic"}
        got = _ok(client.request("context/assemble", asked))
        assert "contextManagement" not in got and "betas" not in got
        assert any("gpt-4o is not among the models" in w for w in got["warnings"]), got
        client.close()


def _log(day: int) -> str:
    return "".join(
        f"day {day} line {n}: worker {n % 7} restarted after a timeout\n" for n in range(120)
    )


def _read(n: int) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {"day": n}}]


def test_the_gauge_takes_what_the_providers_edits_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent loop against the stand-in, context editing on (trigger 2,000 tokens, keep 1 tool
    use): once the provider clears old results, each usage carries `appliedEdits`; the snapshot's
    last call shows what was cleared, the gauge anchors on the figure the provider billed (the
    next call predicted smaller), and the estimate's error compares the prediction with the
    context as tokend sent it (contextTokens + cleared, less what the previous call's edits had
    cleared already), not with the edited one; tokend's own prune then stands aside. On main the
    edits were never sent and the error counted the provider's clearing as tokend's mistake."""
    _user_config(
        "[context_editing]\nenabled = true\ntrigger_tokens = 2000\nkeep_tool_uses = 1\n"
        '[compaction]\nprune_policy = "eager"\nprune_protect_tokens = 0\n'
        "prune_minimum_tokens = 0\n"
    )
    script = [_read(0), _read(1), _read(2), [{"type": "text", "text": "all three restart"}]]
    with real_daemons(monkeypatch) as daemons, stand_in(script) as (api, base):
        client = daemons.standalone()
        assert "result" in client.initialize("edits figures")
        sid = _session(client, "claude-sonnet-4-6")
        ask = {"type": "text", "text": "why do the workers restart? read the logs"}
        _append(client, sid, {"role": "user", "parts": [ask]})
        cleared_before = 0
        for n in range(len(script)):
            assembled = _ok(
                client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
            )
            raw = _send(base, "claude-sonnet-4-6", assembled)
            predicted = _ok(client.request("budget/snapshot", {"sessionId": sid}))["usedTokens"]
            reply = anthropic_reply(raw)
            message = {"role": "assistant", "parts": reply.parts, "usage": reply.usage}
            _append(client, sid, message)
            snapshot = _ok(client.request("budget/snapshot", {"sessionId": sid}))
            last = snapshot["lastCall"]
            edits = (raw.get("context_management") or {}).get("applied_edits", [])
            cleared = sum(e["cleared_input_tokens"] for e in edits)
            assert last["clearedInputTokens"] == cleared
            assert last["contextTokens"] == raw["usage"]["input_tokens"]
            if cleared:  # the next call is predicted without what the provider cleared
                assert snapshot["usedTokens"] < predicted
            if n > 0:
                assert last["predictedTokens"] == predicted
                sent = last["contextTokens"] + cleared - cleared_before
                assert last["errorPct"] == pytest.approx((predicted - sent) / sent * 100, abs=0.01)
            for call in reply.tool_calls:
                result = {"type": "toolResult", "callId": call["callId"], "name": "Read"}
                _append(client, sid, {"role": "tool", "parts": [{**result, "output": _log(n)}]})
            cleared_before = cleared
        assert sum(1 for r in api.replies if "context_management" in r) >= 2, api.replies
        pruned = _ok(client.request("session/compact", {"sessionId": sid, "strategy": "prune"}))
        (action,) = pruned["actions"]
        assert action["kind"] == "skip" and "the provider clears" in action["detail"], action
        # a restarted server reads the same figures from the store
        assert client.stop() == 0
        client = daemons.standalone()
        assert "result" in client.initialize("after a restart")
        again = _ok(client.request("budget/snapshot", {"sessionId": sid}))
        assert again["lastCall"] == snapshot["lastCall"], (again["lastCall"], snapshot["lastCall"])
        assert again["usedTokens"] == snapshot["usedTokens"]
        client.close()


def _settled(client: LspClient, sid: str) -> None:
    """Wait until the session's messages are counted exactly (a Claude model's parts are shown
    by their estimate first: the gauge moves when the exact counts land)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        snapshot = _ok(client.request("budget/snapshot", {"sessionId": sid}))
        basis = {b["category"]: b["basis"] for b in snapshot["breakdown"]}
        if basis.get("messages") == "exact":
            return
        time.sleep(0.05)
    raise AssertionError(f"the messages were not counted exactly in 60 s: {basis}")


def test_native_budget_goes_in_the_task_budget_and_is_sent_again_after_a_compaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`budgetInjection: "native"` for a model with Anthropic's task budgets (Claude Opus 4.7):
    `output_config.task_budget` carries the window and what the gauge leaves of it, the request
    carries no budget text, the stand-in accepts the shape the task budgets page documents; after
    a compaction the next request carries the new remainder. Claude Sonnet 4.6 (no task budgets)
    keeps the budget tags it was trained on. `[context] budget_injection = "auto"` is native
    for a task-budget model."""
    _user_config('[context]\nbudget_injection = "auto"\n')
    words = " ".join(f"step {n}: the migration touched table t{n % 40}" for n in range(3_000))
    script = [[{"type": "text", "text": "noted"}], [{"type": "text", "text": "noted again"}]]
    with real_daemons(monkeypatch) as daemons, stand_in(script) as (api, base):
        client = daemons.standalone()
        assert "result" in client.initialize("task budget")
        sid = _session(client, "claude-opus-4-7")
        for n in range(6):
            _append(
                client, sid, {"role": "user", "parts": [{"type": "text", "text": f"{n} {words}"}]}
            )
            _append(client, sid, {"role": "assistant", "parts": [{"type": "text", "text": "ok"}]})
        _append(client, sid, {"role": "user", "parts": [{"type": "text", "text": "go on"}]})
        auto = _ok(client.request("context/assemble", {"sessionId": sid, "format": "anthropic"}))
        assert auto["outputConfig"]["task_budget"]["type"] == "tokens"
        asked = {"sessionId": sid, "format": "anthropic", "budgetInjection": "native"}
        remainders = []
        for n in range(2):
            _settled(client, sid)  # Claude counts land after the estimate: compare once exact
            got = _ok(client.request("context/assemble", asked))
            snapshot = _ok(client.request("budget/snapshot", {"sessionId": sid}))
            budget = got["outputConfig"]["task_budget"]
            assert budget == {
                "type": "tokens",
                "total": snapshot["contextWindow"],
                "remaining": snapshot["remainingTokens"],
            }
            assert "task-budgets-2026-03-13" in got["betas"]
            assert "budget:token_budget" not in json.dumps(got["messages"])
            assert dict((c["name"], c["tokens"]) for c in got["chunks"])["budget"] == 0
            _send(base, "claude-opus-4-7", got)
            headers, body = api.requests[-1]
            assert "task-budgets-2026-03-13" in headers["anthropic-beta"]
            assert body["output_config"]["task_budget"]["type"] == "tokens"
            remainders.append(budget["remaining"])
            if n == 0:
                compact = {"sessionId": sid, "strategy": "summarize"}
                done = _ok(client.request("session/compact", compact, timeout=60))
                assert done["actions"][0]["kind"] == "summarize", done
        assert remainders[1] > remainders[0]  # the compaction left more of the window
        other = _session(client, "claude-sonnet-4-6")
        _append(client, other, {"role": "user", "parts": [{"type": "text", "text": "hi"}]})
        got = _ok(client.request("context/assemble", {**asked, "sessionId": other}))
        assert "outputConfig" not in got
        assert "<budget:token_budget>" in json.dumps(got["messages"])
        client.close()
