"""The fuzz's cases: every documented method and notification, each field replaced by a bad value.

Each method's params come from protocol.md's own examples (`--> {...}` lines, ids swapped for
a live session's) or, for the methods it shows no example of, from `_templates`; every method
and notification protocol.md heads a section with must be covered (`uncovered()`). `Case.body`
is the request as sent (NaN, a lone surrogate and the like spliced in as raw JSON text), and
`Case.nonsense_if_accepted` says whether a result for it means the daemon took nonsense.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.baseline import ROOT

MAX_PARAMS_DEPTH = 64
WIRE_INT_MAX = 2**31 - 1
SEED = 17
NOTIFICATIONS = {
    "initialized", "exit", "textDocument/didOpen", "textDocument/didChange",
    "textDocument/didClose", "textDocument/didSave", "$/cancelRequest",
    "window/workDoneProgress/cancel",
}  # fmt: skip
FRESH = {"initialize", "shutdown", "exit"}  # each case on a connection of its own
SERVER_TO_CLIENT = {"budget/didChange", "session/didCompact", "session/summarize", "$/progress",
                    "window/logMessage"}  # fmt: skip
FREE_FORM = {"input", "initializationOptions", "capabilities", "tools", "examples"}
"""Fields whose contents are any JSON (a tool's input, a provider's tool definitions)."""
ALSO = {"workDoneToken": int}  # a ProgressToken: a string or an integer


def _nested(levels: int) -> bytes:
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


def _words(size: int) -> bytes:
    """A JSON string of `size` bytes of words (one repeated character would mostly measure the
    tokenizer: 8 MB of "e" takes it 17 s)."""
    text = b"the quick brown fox jumps over the lazy dog 0123456789 "
    return b'"' + (text * (size // len(text) + 1))[:size] + b'"'


BIG = ("1 MB string", "8 MB string")  # run last, after every other value
BAD_VALUES: list[tuple[str, bytes]] = [
    ("null", b"null"), ("true", b"true"), ("false", b"false"), ("0", b"0"), ("-1", b"-1"),
    ("2^63", b"9223372036854775808"), ("1e308", b"1e308"), ("NaN", b"NaN"),
    ("Infinity", b"Infinity"), ('""', b'""'), ("1 MB string", _words(1 << 20)),
    ("8 MB string", _words(8 << 20)), ("NUL", b'"a\\u0000b"'),
    ("lone surrogate", b'"\\ud800"'), ("RTL and emoji", '"\u202eשלום 😀 \u200f"'.encode()),
    ("[]", b"[]"), ("{}", b"{}"), ("nested 62", _nested(62)), ("nested 1,000", _nested(1000)),
]  # fmt: skip
ALWAYS_NONSENSE = {"NaN", "Infinity", "lone surrogate"}
_SENT = {name: json.loads(raw if len(raw) < 4096 else b'""') for name, raw in BAD_VALUES}


@dataclass(frozen=True)
class Call:
    method: str
    params: Any

    @property
    def notification(self) -> bool:
        return self.method in NOTIFICATIONS


@dataclass(frozen=True)
class Case:
    call: Call
    path: tuple[str | int, ...]  # () is params itself
    value: str

    def body(self, msg_id: int) -> bytes:
        marker = "@@fuzz@@"
        params = _replaced(self.call.params, self.path, marker)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": self.call.method, "params": params}
        if not self.call.notification:
            message["id"] = msg_id
        text = json.dumps(message).encode()
        return text.replace(json.dumps(marker).encode(), dict(BAD_VALUES)[self.value], 1)

    def nonsense_if_accepted(self) -> bool:
        """Whether a result for this case means the daemon took nonsense."""
        if self.value in ALWAYS_NONSENSE:
            return True
        if self.value.startswith("nested"):
            levels = int(self.value.split()[1].replace(",", ""))
            if len(self.path) + levels > MAX_PARAMS_DEPTH:
                return True
        if any(key in FREE_FORM for key in self.path):
            return False
        original = _at(self.call.params, self.path)
        if original is None or (not self.path and self.call.params is None):
            return False
        sent = _SENT[self.value]
        if sent is None:
            return False  # null may stand for an optional field left out
        if self.path and ALSO.get(str(self.path[-1])) is int and type(sent) is int:
            return not 0 <= sent <= WIRE_INT_MAX
        if isinstance(original, bool):
            return not isinstance(sent, bool)
        if isinstance(original, int):
            return not (isinstance(sent, int) and not isinstance(sent, bool)) or not (
                0 <= sent <= WIRE_INT_MAX
            )
        kinds = (str, dict, list)
        return any(isinstance(original, k) and not isinstance(sent, k) for k in kinds)


def _replaced(params: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(params))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


def _at(params: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        params = params[key]
    return params


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], (*prefix, 0))


# -- what to call ---------------------------------------------------------------------------


def documented_methods() -> set[str]:
    """Every method and notification a client may send that protocol.md heads a section with."""
    text = (ROOT / "protocol.md").read_text()
    methods: set[str] = set()
    for heading in re.findall(r"^### (.*)$", text[: text.index("## Budgets")], re.M):
        names = re.findall(r"`([^`]+)`", heading)
        prefix = ""
        for name in names:
            if "/" in name:
                prefix = name.rsplit("/", 1)[0] + "/"
                methods.add(name)
            elif prefix:
                methods.add(prefix + name)
    methods -= SERVER_TO_CLIENT
    return methods | {"initialize", "initialized", "shutdown", "exit", "$/cancelRequest"}


def calls(session_id: str, message_ids: list[str], workspace: Path, ref: str) -> list[Call]:
    """protocol.md's example requests with this run's ids, and TEMPLATES for the rest."""
    text = (ROOT / "protocol.md").read_text()
    uri = workspace.as_uri()
    found: dict[str, Call] = {}
    for line in re.findall(r"^--> (\{.*\})$", text, re.M):
        message = json.loads(line)
        if message["method"] in found:
            continue
        params = _swap_ids(message.get("params"), session_id, message_ids, uri, ref)
        found[message["method"]] = Call(message["method"], params)
    if "session/compact" in found:  # prune: a summary would ask this client to write it
        found["session/compact"] = Call(
            "session/compact", {**found["session/compact"].params, "strategy": "prune",
                                "workDoneToken": "fuzz"})  # fmt: skip
    extra = _templates(session_id, message_ids, workspace)
    return [*found.values(), *(call for call in extra if call.method not in found or
                                call.method in {"session/append", "context/assemble"})]  # fmt: skip


def _swap_ids(value: Any, session_id: str, message_ids: list[str], uri: str, ref: str) -> Any:
    if isinstance(value, dict):
        return {k: _swap_ids(v, session_id, message_ids, uri, ref) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_ids(v, session_id, message_ids, uri, ref) for v in value]
    if isinstance(value, str):
        if re.fullmatch(r"01JD[0-9A-Z]{22}", value):
            return session_id if value.endswith(("B8C", "004")) else message_ids[0]
        if value.startswith("file:///home/me/project"):
            return uri + value.removeprefix("file:///home/me/project")
        if value.startswith("sha256:"):
            return ref
        if value.startswith("app/"):
            return "a.py"
    return value


def _templates(session_id: str, message_ids: list[str], workspace: Path) -> list[Call]:
    uri, file_uri, first = workspace.as_uri(), (workspace / "a.py").as_uri(), message_ids[0]
    doc = {"uri": file_uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
    assistant = {
        "role": "assistant", "model": "gpt-4o", "durationMs": 120,
        "parts": [{"type": "toolCall", "callId": "call-fuzz", "name": "bash",
                   "input": {"command": "ls"}}],
        "usage": {"inputTokens": 10, "outputTokens": 5,
                  "iterations": [{"type": "message", "inputTokens": 10, "outputTokens": 5}],
                  "appliedEdits": [{"type": "clear_tool_uses_20250919",
                                    "clearedInputTokens": 40, "clearedToolUses": 2}]},
    }  # fmt: skip
    return [
        Call("initialize", {"processId": None, "rootUri": uri, "capabilities": {},
                            "clientInfo": {"name": "fuzz", "version": "1"},
                            "initializationOptions": {"session": "active"},
                            "workspaceFolders": [{"uri": uri, "name": "ws"}]}),
        Call("initialized", {}),
        Call("shutdown", None),
        Call("exit", None),
        Call("session/append", {"sessionId": session_id, "message": assistant}),
        Call("context/assemble", {"sessionId": session_id, "format": "anthropic",
                                  "tools": [{"name": "bash"}],
                                  "readOnlyFiles": [{"path": "a.py", "text": "x = 1"}],
                                  "budgetInjection": "off", "contextEditing": True}),
        Call("session/reload", {"sessionId": session_id}),
        Call("session/handoff", {"sessionId": session_id, "goal": "finish the fuzz"}),
        Call("follow/start", {"agent": "claude-code", "path": str(workspace / "none.jsonl")}),
        Call("follow/list", None),
        Call("statusline/line", {"given": {"transcript_path": str(workspace / "none.jsonl"),
                                           "cwd": str(workspace),
                                           "model": {"id": "claude-opus-4-6"}},
                                 "segments": ["context", "cost"], "colour": False,
                                 "agent": "claude-code"}),
        Call("follow/stop", {"followerId": "f-none"}),
        Call("files/drop", {"sessionId": session_id, "paths": ["a.py"]}),
        Call("checkpoint/list", {"sessionId": session_id}),
        Call("checkpoint/diff", {"sessionId": session_id, "messageId": first, "path": "a.py"}),
        Call("checkpoint/restore", {"sessionId": session_id, "toMessageId": first,
                                    "dryRun": True}),
        Call("textDocument/didOpen", {"textDocument": doc}),
        Call("textDocument/didChange", {"textDocument": {"uri": file_uri, "version": 2},
                                        "contentChanges": [{"text": "x = 2\n"}]}),
        Call("textDocument/didSave", {"textDocument": {"uri": file_uri}, "text": "x = 2\n"}),
        Call("textDocument/didClose", {"textDocument": {"uri": file_uri}}),
        Call("$/cancelRequest", {"id": 99}),
        Call("window/workDoneProgress/cancel", {"token": "fuzz"}),
    ]  # fmt: skip


def uncovered(all_calls: list[Call]) -> set[str]:
    return documented_methods() - {call.method for call in all_calls}


def cases(all_calls: list[Call], per_call: int | None = None) -> list[Case]:
    """Every (call, field, bad value) in a fixed shuffled order, the big strings last (1 MB, then
    8 MB); `per_call`: a sample of that many per call."""
    rng = random.Random(SEED)
    chosen: list[Case] = []
    for call in all_calls:
        mine = [Case(call, path, name) for path in _paths(call.params) for name, _ in BAD_VALUES]
        chosen += rng.sample(mine, min(per_call, len(mine))) if per_call else mine
    rng.shuffle(chosen)
    return sorted(chosen, key=lambda case: BIG.index(case.value) + 1 if case.value in BIG else 0)
