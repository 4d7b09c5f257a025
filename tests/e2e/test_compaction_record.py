"""Issue 21: a `summarize` compaction draws the user's words and the artifact index from the
whole stored history, across a client's own compaction boundary. Real processes: `tokend import
claude-code` writes the transcript into a SQLite file, `tokend lsp --standalone` compacts it and
assembles the request; the oracles are the transcript's own strings, written here."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import tokend_env
from tests.in_process import InProcessClient, tokend_cli

FIRST_WORDS = "Rename parse_row to read_row in src/alpha_rows.py and keep the public API intact"
ERROR_LINE = "FAILED tests/test_alpha_rows.py::test_read_row - AssertionError: 3 != 4"
FOREIGN = "Earlier work (the agent's own summary): the parser was renamed; tests were red."
EARLY_FILE = "src/alpha_rows.py"


class Transcript:
    """Claude Code records, chained by parentUuid."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.n = 0
        self.chars = 0  # since the last boundary: the calls' usage says about a quarter in tokens

    def _add(self, record: dict) -> None:
        self.n += 1
        self.chars += len(json.dumps(record.get("message", {}).get("content", "")))
        parent = self.records[-1]["uuid"] if self.records else None
        stamp = f"2026-02-11T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"
        self.records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "cwd": "/project",
                "sessionId": "s-1",
                "uuid": f"u-{self.n}",
                "timestamp": stamp,
                **record,
            }
        )

    def user(self, content, **extra) -> None:
        self._add({"type": "user", "message": {"role": "user", "content": content}, **extra})

    def assistant(self, *blocks: dict) -> None:
        message = {
            "model": "claude-sonnet-4-6",
            "id": f"msg-{self.n}",
            "type": "message",
            "role": "assistant",
            "content": list(blocks),
            "usage": {"input_tokens": self.chars // 4, "output_tokens": 10},
        }
        self._add({"type": "assistant", "message": message})

    def tool(self, call_id: str, name: str, value: dict, output: str, error: bool = False) -> None:
        self.assistant({"type": "tool_use", "id": call_id, "name": name, "input": value})
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        self.user([{**result, "is_error": error}])

    def boundary(self, summary: str) -> None:
        self.chars = 0
        self._add(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "auto", "preTokens": 150000},
            }
        )
        self.user(summary, isCompactSummary=True)


def transcript() -> Transcript:
    t = Transcript()
    t.user(FIRST_WORDS)
    t.tool("c1", "Read", {"file_path": EARLY_FILE}, "def parse_row(line): ...")
    t.tool("c2", "Edit", {"file_path": EARLY_FILE, "old_string": "a", "new_string": "b"}, "ok")
    t.tool("c3", "Bash", {"command": "pytest -q"}, f"Exit code 1\n{ERROR_LINE}", error=True)
    t.assistant({"type": "text", "text": "The test still fails; I will look again."})
    t.boundary(FOREIGN)
    for i in range(12):  # enough after the boundary that the summary has a head to replace
        t.user(f"later request {i}: document module {i} " + "in plain words " * 600)
        t.tool(f"d{i}", "Write", {"file_path": f"docs/m{i}.md", "content": "x"}, "written")
        t.assistant({"type": "text", "text": f"documented module {i} " + "carefully " * 900})
    return t


def import_session(tmp_path: Path, db: Path) -> str:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in transcript().records))
    done = tokend_cli(
        "import", "claude-code", str(path), "--json",
        cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["compactions"] == 1
    return str(outcome["sessionId"])


def every_string(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(every_string(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(every_string(v) for v in value)
    return ""


async def test_summarize_keeps_what_came_before_a_foreign_boundary(tmp_path):
    db = tmp_path / "tokend.sqlite3"
    sid = import_session(tmp_path, db)
    client = await InProcessClient.start(
        cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    try:
        await client.initialize()
        before = await client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
        assert FIRST_WORDS not in every_string(before)  # Claude Code's compaction took it out
        compacted = await client.request(
            "session/compact", {"sessionId": sid, "strategy": "summarize"}
        )
        [action] = compacted["actions"]
        assert action["kind"] == "summarize", action
        assert "from before earlier compactions" in action["detail"]
        assert "kept as written, not as the record" in action["detail"]
        assert "previous summary merged in" not in action["detail"]
        after = await client.request("context/assemble", {"sessionId": sid, "format": "anthropic"})
        seen = every_string(after)
        assert FIRST_WORDS in seen
        assert EARLY_FILE in seen
        assert ERROR_LINE in seen
        assert FOREIGN in seen  # kept, labelled as the agent's own words
        assert "The agent's own earlier summary" in seen
    finally:
        assert await client.shutdown() == 0


async def test_handoff_keeps_what_came_before_a_foreign_boundary(tmp_path):
    db = tmp_path / "tokend.sqlite3"
    sid = import_session(tmp_path, db)
    client = await InProcessClient.start(
        cwd=tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}")
    )
    try:
        await client.initialize()
        handed = await client.request(
            "session/handoff", {"sessionId": sid, "goal": "write the changelog"}
        )
        child = handed["sessionId"]
        seen = every_string(
            await client.request("context/assemble", {"sessionId": child, "format": "anthropic"})
        )
        assert FIRST_WORDS in seen
        assert EARLY_FILE in seen
        assert ERROR_LINE in seen
    finally:
        assert await client.shutdown() == 0
