"""Every handler that became a typed top-level function (lsp/handler_table.py) still refuses a
wrong JSON type in one step, before it runs, with protocol.md's InvalidParams (-32602) naming the
field in camelCase: one wrong type per method, sent to `tokend lsp --standalone`'s real server
(tests/in_process.py) on a real SQLite file. The session the params name exists, so a refusal
can only come from the params' type. daemon/status and follow/list take no params: whatever is
sent there is ignored, as it was before they were typed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lsp_client import RpcClient, RpcError

SID = "<session>"  # replaced by the session the test creates

# method, params (one field of a wrong JSON type), the refusal's message after "invalid params: "
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("session/create", {"model": 5}, "model must be a string, not an integer"),
    (
        "session/append",
        {"sessionId": SID, "message": "hello"},
        "message must be an object, not a string",
    ),
    ("session/list", {"all": "yes"}, "all must be true or false, not a string"),
    ("session/attach", {"sessionId": 5}, "sessionId must be a string, not an integer"),
    ("session/detach", {"sessionId": [SID]}, "sessionId must be a string, not an array"),
    ("session/compact", {"sessionId": SID, "strategy": 1}, 'strategy must be one of "auto", '),
    (
        "session/messages",
        {"sessionId": SID, "includeCompacted": "yes"},
        "includeCompacted must be true or false, not a string",
    ),
    (
        "session/rewind",
        {"sessionId": SID, "toMessageId": 3},
        "toMessageId must be a string, not an integer",
    ),
    ("session/handoff", {"sessionId": SID, "goal": 5}, "goal must be a string, not an integer"),
    (
        "context/assemble",
        {"sessionId": SID, "readOnlyFiles": "a.py"},
        "readOnlyFiles must be an array, not a string",
    ),
    ("files/add", {"sessionId": SID, "paths": "a.py"}, "paths must be an array, not a string"),
    (
        "files/drop",
        {"sessionId": SID, "paths": {"a.py": 1}},
        "paths must be an array, not an object",
    ),
    ("files/list", {"sessionId": 5}, "sessionId must be a string, not an integer"),
    (
        "workspace/fileTokens",
        {"workspaceUri": "file:///nowhere", "exact": "yes"},
        "exact must be true or false, not a string",
    ),
    ("checkpoint/list", {"sessionId": 5}, "sessionId must be a string, not an integer"),
    (
        "checkpoint/restore",
        {"sessionId": SID, "toMessageId": "m", "dryRun": 1},
        "dryRun must be true or false, not an integer",
    ),
    (
        "repoMap/get",
        {"sessionId": SID, "budgetTokens": "big"},
        "budgetTokens must be an integer, not a string",
    ),
    (
        "statusline/line",
        {"given": {"transcript_path": "t.jsonl"}, "colour": "yes"},
        "colour must be true or false, not a string",
    ),
]


def _with_session(value: Any, sid: str) -> Any:
    if value == SID:
        return sid
    if isinstance(value, dict):
        return {k: _with_session(v, sid) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_session(v, sid) for v in value]
    return value


async def test_each_typed_handler_refuses_a_wrong_json_type_naming_the_field(server: RpcClient):
    created = await server.request("session/create", {"model": "gpt-4o"})
    sid = created["sessionId"]
    wrong = []
    for method, params, message in CASES:
        try:
            answered = await server.request(method, _with_session(params, sid))
        except RpcError as refused:
            got = (refused.code, refused.message)
            if refused.code == -32602 and refused.message.startswith(f"invalid params: {message}"):
                continue
            wrong.append(f"{method}: {got}")
        else:
            wrong.append(f"{method}: answered {answered!r}")
    assert not wrong, "\n".join(wrong)
    # and nothing was changed by the refusals: the session is as it was created
    snapshot = await server.request("budget/snapshot", {"sessionId": sid})
    assert snapshot["version"] == created["version"]


@pytest.mark.parametrize("params", [None, {}, [], {"unused": 1}])
async def test_methods_without_params_ignore_what_is_sent(server: RpcClient, params: Any):
    status = await server.request("daemon/status", params)
    assert status["connections"] and status["sessions"] == []
    assert await server.request("follow/list", params) == {"followers": []}
