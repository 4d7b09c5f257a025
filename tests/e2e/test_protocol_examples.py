"""protocol.md's examples are a real run: this test plays the documented scenario against the real
`tokend lsp --standalone` and compares every tagged example block with what the server said.

Volatile values are normalized the same way on both sides: ULIDs (in order of appearance),
timestamps, the pid, the uptime and a session's wall time; strings over 160 characters are shown
as their start and length. To refresh the examples after a deliberate change, run
with TOKEND_WRITE_PROTOCOL_EXAMPLES=1 and review the diff of protocol.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import tokend_env
from tests.daemon.real_daemon import real_daemons
from tests.in_process import InProcessClient
from tests.lsp_client import ProcessClient, RpcError

PROTOCOL = Path(__file__).resolve().parents[2] / "protocol.md"
TAG = re.compile(r"<!-- example: ([A-Za-z0-9/-]+) -->\n```json\n(.*?)```\n", re.S)
ULID = re.compile(r"\b01[0-9A-HJKMNP-TV-Z]{24}\b")
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")
FAKE_IDS = [
    "01JD3M6Q1V8T9W2X4Y5Z6A7B8C",
    "01JD3M6R0C0DE5F6G7H8J9K0MN",
    "01JD3M6S2P3Q4R5S6T7V8W9X0Y",
]


class Transcript:
    """Request/response lines per example name, as the wire carried them."""

    def __init__(self, project: Path | None = None) -> None:
        self.project = project  # shown as /home/me/project
        self.lines: dict[str, list[str]] = {}
        self.ids: dict[str, str] = {}
        self.next_id = 1

    def _norm(self, value: Any) -> str:
        text = json.dumps(_shortened(value), separators=(",", ":"), ensure_ascii=False)

        def fake(match: re.Match[str]) -> str:
            ulid = match.group(0)
            if ulid not in self.ids:
                n = len(self.ids)
                self.ids[ulid] = FAKE_IDS[n] if n < len(FAKE_IDS) else f"01JD3M7{n:019d}"
            return self.ids[ulid]

        if self.project is not None:
            text = text.replace(self.project.as_uri(), "file:///home/me/project")
            text = text.replace(str(self.project), "/home/me/project")
        text = ULID.sub(fake, text)
        text = STAMP.sub("2026-11-22T05:40:00+00:00", text)
        text = re.sub(r'"pid":\d+', '"pid":4242', text)
        text = re.sub(r'"wallMs":\d+', '"wallMs":1840', text)
        text = re.sub(r'"secondsLeft":\d+', '"secondsLeft":298', text)  # the clock moves
        return re.sub(r'"uptimeSeconds":[0-9.]+', '"uptimeSeconds":73.2', text)

    async def call(self, server: ProcessClient, name: str, method: str, params: Any) -> Any:
        msg_id = self.next_id
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            request["params"] = params
        out = self.lines.setdefault(name, [])
        out.append("--> " + self._norm(request))
        try:
            result = await server.request(method, params)
        except RpcError as error:
            body = {"code": error.code, "message": error.message}
            if error.data is not None:
                body["data"] = error.data
            out.append("<-- " + self._norm({"jsonrpc": "2.0", "id": msg_id, "error": body}))
            return error
        out.append("<-- " + self._norm({"jsonrpc": "2.0", "id": msg_id, "result": result}))
        return result


LONG = 160  # characters: longer strings are shown as their start and their length


def _shortened(value: Any) -> Any:
    """Long strings (a chat file, a tool output) as `start…(N chars)`, in requests and replies."""
    if isinstance(value, str) and len(value) > LONG:
        return f"{value[:40]}…({len(value):,} chars)"
    if isinstance(value, list):
        return [_shortened(v) for v in value]
    if isinstance(value, dict):
        return {k: _shortened(v) for k, v in value.items()}
    return value


def text(t: str) -> dict[str, str]:
    return {"type": "text", "text": t}


def make_project(root: Path) -> Path:
    """A small real workspace: two modules, a memory file, an ignored folder."""
    project = root / "project"
    (project / "app").mkdir(parents=True)
    (project / "build").mkdir()
    (project / ".gitignore").write_text("build/\n")
    (project / "build" / "out.txt").write_text("generated\n")
    (project / "AGENTS.md").write_text("Run `make test` before every commit.\n")
    (project / "app" / "server.py").write_text(
        "from app.config import load_config\n\n\n"
        "def start(port: int) -> None:\n    config = load_config()\n    print(config, port)\n"
    )
    (project / "app" / "config.py").write_text(
        'def load_config() -> dict[str, str]:\n    return {"mode": "dev"}\n'
    )
    return project


async def scenario(server: ProcessClient, project: Path) -> Transcript:
    t = Transcript(project)
    ws = project.as_uri()
    initialize = {
        "processId": None,
        "clientInfo": {"name": "my-agent", "version": "0.1.0"},
        "rootUri": ws,
        "workspaceFolders": [{"uri": ws, "name": "project"}],
        "capabilities": {"window": {"workDoneProgress": True}},
        "initializationOptions": {},
    }
    t.next_id = 0  # the other examples keep their ids
    await t.call(server, "initialize", "initialize", initialize)
    server.notify("initialized", {})
    created = await t.call(
        server,
        "session/create",
        "session/create",
        {
            "model": "claude-opus-4-6",
            "title": "fix the build",
            "workspaceUri": ws,
            "contextWindow": 200000,
        },
    )
    sid = created["sessionId"]
    user = {"role": "user", "parts": [text("mix phx.server does not start")]}
    await t.call(server, "session/append", "session/append", {"sessionId": sid, "message": user})
    call = {
        "type": "toolCall",
        "callId": "toolu_1",
        "name": "Bash",
        "input": {"command": "mix phx.server"},
    }
    usage = {
        "inputTokens": 3,
        "outputTokens": 41,
        "cacheReadTokens": 11515,
        "cacheWriteTokens": 13835,
    }
    reply = {"role": "assistant", "parts": [call], "usage": usage, "durationMs": 2400}
    await t.call(server, "session/append", "session/append", {"sessionId": sid, "message": reply})
    bad = {
        "role": "assistant",
        "parts": [text("ok")],
        "usage": {"inputTokens": "5", "outputTokens": 1},
    }
    await t.call(
        server, "session/append-error", "session/append", {"sessionId": sid, "message": bad}
    )
    # The workspace first: its index and tags are then ready for the assembly below.
    await t.call(
        server,
        "workspace/fileTokens",
        "workspace/fileTokens",
        {"workspaceUri": ws, "paths": ["app/server.py", "app/config.py"], "exact": True},
    )
    await t.call(server, "files/add", "files/add", {"sessionId": sid, "paths": ["app/config.py"]})
    await t.call(server, "files/list", "files/list", {"sessionId": sid})
    await t.call(
        server,
        "repoMap/get",
        "repoMap/get",
        {"sessionId": sid, "budgetTokens": 1024, "focus": {"files": [], "identifiers": ["start"]}},
    )
    await t.call(server, "session/list", "session/list", {"workspaceUri": ws})
    await t.call(server, "budget/snapshot", "budget/snapshot", {"sessionId": sid})
    await t.call(
        server,
        "context/assemble",
        "context/assemble",
        {"sessionId": sid, "format": "openai", "system": "You are a careful engineer."},
    )
    await t.call(
        server,
        "context/assemble-error",
        "context/assemble",
        {
            "sessionId": sid,
            "format": "anthropic",
            "chatFiles": [{"path": "src/big.py", "text": "def f(x):\n    return x + 1\n" * 16000}],
        },
    )
    await t.call(server, "daemon/status", "daemon/status", None)
    await t.call(
        server,
        "session/rename",
        "session/rename",
        {"sessionId": sid, "title": "fix the phoenix build"},
    )
    await t.call(server, "session/delete", "session/delete", {"sessionId": sid})
    await t.call(server, "session/delete", "session/attach", {"sessionId": sid})
    await t.call(server, "session/restore", "session/restore", {"sessionId": sid})
    await t.call(server, "session/rename", "session/rename", {"sessionId": sid, "title": " "})

    # A session with old tool output to prune.
    other = await server.request("session/create", {"model": "gpt-4o", "contextWindow": 400000})
    oid = other["sessionId"]
    for i in range(8):
        await server.request(
            "session/append",
            {"sessionId": oid, "message": {"role": "user", "parts": [text(f"step {i}")]}},
        )
        tool_call = {
            "type": "toolCall",
            "callId": f"c{i}",
            "name": "bash",
            "input": {"cmd": f"make {i}"},
        }
        await server.request(
            "session/append",
            {"sessionId": oid, "message": {"role": "assistant", "parts": [tool_call]}},
        )
        output = f"compiling unit {i}: warning: deprecated flag in module {i}\n" * 800
        result = {"type": "toolResult", "callId": f"c{i}", "name": "bash", "output": output}
        await server.request(
            "session/append", {"sessionId": oid, "message": {"role": "tool", "parts": [result]}}
        )
    compacted = await t.call(
        server, "session/compact", "session/compact", {"sessionId": oid, "strategy": "prune"}
    )
    # The documented result shows the snapshot as a reference; the test checks the rest.
    assert compacted["snapshot"]["usedTokens"] == compacted["after"]

    # A chat-only session: summarized, listed, rewound, forked; a gated tool output read back.
    chat = (await server.request("session/create", {"model": "gpt-4o"}))["sessionId"]
    for i in range(12):
        role = "user" if i % 2 == 0 else "assistant"
        words = f"turn {i}: we agreed to keep the public API of module {i} stable. " * 30
        await server.request(
            "session/append", {"sessionId": chat, "message": {"role": role, "parts": [text(words)]}}
        )
    ids = [
        m["messageId"]
        for m in (await server.request("session/messages", {"sessionId": chat}))["messages"]
    ]
    await t.call(
        server,
        "session/compact-summarize",
        "session/compact",
        {
            "sessionId": chat,
            "strategy": "summarize",
            "fromMessageId": ids[8],
            "instructions": "keep the API decisions",
        },
    )
    listed = await t.call(server, "session/messages", "session/messages", {"sessionId": chat})
    last_live = listed["messages"][-2]["messageId"]
    await t.call(
        server, "session/rewind", "session/rewind", {"sessionId": chat, "toMessageId": last_live}
    )
    await t.call(server, "session/fork", "session/fork", {"sessionId": chat, "title": "try b"})
    gated_call = {"type": "toolCall", "callId": "g1", "name": "bash", "input": {"cmd": "seq"}}
    await server.request(
        "session/append",
        {"sessionId": chat, "message": {"role": "assistant", "parts": [gated_call]}},
    )
    long_output = "".join(f"line {n}\n" for n in range(10_000))
    gated = await server.request(
        "session/append",
        {
            "sessionId": chat,
            "message": {
                "role": "tool",
                "parts": [
                    {"type": "toolResult", "callId": "g1", "name": "bash", "output": long_output}
                ],
            },
        },
    )
    ref = gated["gated"][0]["ref"]
    await t.call(
        server,
        "toolOutput/read",
        "toolOutput/read",
        {"sessionId": chat, "ref": ref, "offset": 0, "length": 40},
    )
    return t


def documented() -> dict[str, str]:
    return {name: block for name, block in TAG.findall(PROTOCOL.read_text())}


def _shown(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


@pytest.fixture
async def server(tmp_path):
    db = tmp_path / "tokend.sqlite3"
    client = await InProcessClient.start(
        cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    yield client  # the scenario sends `initialize` itself: its example is the first one
    assert await client.shutdown() == 0


@pytest.fixture
def example_root():
    """One fixed folder for the example's workspace: a memory file's count includes its path,
    and pytest's numbered folders (pytest-9, then pytest-10) changed a figure of the example."""
    root = Path(tempfile.gettempdir()) / "tokend-protocol-examples"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def test_protocol_examples_are_what_the_server_says(server, example_root):
    ran = await scenario(server, make_project(example_root))
    produced = {name: _shown(lines) for name, lines in ran.lines.items()}
    if os.environ.get("TOKEND_WRITE_PROTOCOL_EXAMPLES") == "1":
        source = PROTOCOL.read_text()
        source = TAG.sub(
            lambda m: (
                f"<!-- example: {m.group(1)} -->\n```json\n{produced.get(m.group(1), m.group(2))}```\n"
            ),
            source,
        )
        PROTOCOL.write_text(source)
    docs = documented()
    assert set(produced) <= set(docs), (
        f"examples missing from protocol.md: {set(produced) - set(docs)}"
    )
    for name, block in produced.items():
        assert docs[name] == block, f"protocol.md's {name} example differs from a real run"


async def test_the_daemon_status_example_is_what_a_daemon_says(monkeypatch, tmp_path):
    """`daemon/status` from a real daemon (`tokend serve`), through `tokend lsp` as agents and
    editors run it: an agent's session, an editor that follows it."""
    with real_daemons(monkeypatch) as daemons:
        daemons.serve()
        project = make_project(tmp_path)
        ws = project.as_uri()
        agent = await ProcessClient.spawn("lsp", cwd=tmp_path, env=tokend_env())
        editor = None
        try:
            await agent.initialize(name="my-agent")
            sid = (await agent.request("session/create", {"model": "gpt-4o", "workspaceUri": ws}))[
                "sessionId"
            ]
            user = {"role": "user", "parts": [text("mix phx.server does not start")]}
            await agent.request("session/append", {"sessionId": sid, "message": user})
            editor = await ProcessClient.spawn("lsp", cwd=tmp_path, env=tokend_env())
            await editor.request(
                "initialize",
                {
                    "processId": None,
                    "clientInfo": {"name": "Visual Studio Code"},
                    "workspaceFolders": [{"uri": ws, "name": "project"}],
                    "capabilities": {},
                    "initializationOptions": {"session": "active"},
                },
            )
            editor.notify("initialized", {})
            change = await editor.next_notification("budget/didChange")  # it follows the session
            assert change["sessionId"] == sid
            t = Transcript(project)
            t.next_id = 7
            await t.call(agent, "daemon/status-daemon", "daemon/status", None)
        finally:
            assert await agent.shutdown() == 0
            assert editor is None or await editor.shutdown() == 0
    produced = _shown(t.lines["daemon/status-daemon"])
    if os.environ.get("TOKEND_WRITE_PROTOCOL_EXAMPLES") == "1":
        source = PROTOCOL.read_text()
        PROTOCOL.write_text(
            TAG.sub(
                lambda m: (
                    f"<!-- example: {m.group(1)} -->\n```json\n"
                    f"{produced if m.group(1) == 'daemon/status-daemon' else m.group(2)}```\n"
                ),
                source,
            )
        )
    assert documented().get("daemon/status-daemon") == produced, produced
