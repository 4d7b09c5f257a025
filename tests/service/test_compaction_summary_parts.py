"""Aider's recursion for a summarizer whose window is smaller than the head: a real
OpenAI-shaped HTTP server on 127.0.0.1 (tests/model_servers.py) behind a model whose window the
user config declares small, a real SQLite store.

Oracles: the requests the server received (each counted with tiktoken's o200k_base, the
session model's encoding, plus the maxTokens it asked for, against the declared window; which
ones are parts and which are merges, by their text), the paths this test's tool calls touched,
and the summary `context/assemble` sends."""

from __future__ import annotations

import json

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tests.model_servers import ModelServer
from tokend.adapters.tokenizers import load_encoding  # tiktoken's, on the packaged vocabulary
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
from tokend.service.app import open_service
from tokend.service.compaction.tiers import compact

MODEL = "tiny-summarizer"


@pytest.fixture
def server():
    openai = ModelServer("openai").start()
    yield openai
    openai.stop()


def configure(isolated_dirs, base_url: str, window: int) -> None:
    folder = isolated_dirs / "xdg_config_home" / "tokend"
    folder.mkdir(parents=True, exist_ok=True)
    summarizer = {"chain": ["openai", "extractive"], "openai_base_url": base_url}
    lines = ["[summarizer]", *(f"{k} = {json.dumps(v)}" for k, v in summarizer.items())]
    lines += [
        f'openai_model = "{MODEL}"',
        f'[models."{MODEL}"]',
        f"context_window = {window}",
        "max_output_tokens = 500",
    ]
    (folder / "config.toml").write_text("\n".join(lines) + "\n")


def work(service, sid: str, turns: int) -> list[str]:
    """Turns that read, edit, create and delete files and run commands; the paths touched."""
    touched = []
    for i in range(turns):
        append(service, sid, "user", [TextPart(f"step {i}: port rule {i}, no new dependency")])
        read, edit, new = f"src/rules/r{i}.py", f"src/core/c{i}.py", f"tests/test_r{i}.py"
        calls = [
            ToolCallPart(f"r{i}", "Read", {"file_path": read}),
            ToolCallPart(
                f"e{i}", "Edit", {"file_path": edit, "old_string": "a", "new_string": "b"}
            ),
            ToolCallPart(f"w{i}", "Write", {"file_path": new, "content": "def test(): pass\n"}),
        ]
        touched += [read, edit, new]
        append(service, sid, "assistant", [TextPart("looking at the rule. " * 60), *calls])
        results = [
            ToolResultPart(f"r{i}", "Read", "def rule():\n    return 1\n" * 30),
            ToolResultPart(f"e{i}", "Edit", "updated"),
            ToolResultPart(f"w{i}", "Write", "created"),
        ]
        append(service, sid, "tool", results)
        append(service, sid, "assistant", [TextPart(f"rule {i} ported. " + "because " * 300)])
    return touched


def sent(service, sid: str) -> tuple[str, str]:
    """(the summary, the verbatim tail after it) as context/assemble sends them."""
    first, *tail = assemble_context(service, sid, AssembleInput(format="openai")).messages
    assert first["role"] == "system"
    return str(first["content"]), json.dumps(tail)


def request_tokens(body: dict) -> int:
    encoding = load_encoding("o200k_base")
    return len(encoding.encode_ordinary(body["messages"][0]["content"])) + body["max_tokens"]


def compacted(tmp_path, isolated_dirs, server, window: int):
    """A session of 24 turns compacted in full with a summarizer of `window` tokens: the
    service, the session, the paths its turns touched, and the compaction's action."""
    configure(isolated_dirs, server.base_url, window)
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    touched = work(service, sid, turns=24)
    [action] = compact(service, sid, "full").actions
    assert action.kind == "full", action.detail
    return service, sid, touched, action


@pytest.mark.parametrize("window", [6_000, 20_000])
def test_a_head_over_the_summarizers_window_is_summarized_in_parts_then_merged(
    tmp_path, isolated_dirs, server, window
):
    service, sid, touched, action = compacted(tmp_path, isolated_dirs, server, window)

    bodies = [r.body for r in server.requests]
    assert all(b["model"] == MODEL for b in bodies)
    sizes = [request_tokens(b) for b in bodies]
    assert max(sizes) <= window, sizes
    parts = [b for b in bodies if "# The conversation to summarize" in b["messages"][0]["content"]]
    merges = [b for b in bodies if "# Part 1 of 2" in b["messages"][0]["content"]]
    assert len(parts) + len(merges) == len(bodies)
    assert len(parts) >= 2 and len(merges) == len(parts) - 1  # a binary tree of calls
    assert len(bodies) <= 2**4 - 1  # depth 3 at most
    assert f"openai:{MODEL}: used ({len(bodies)} calls, split to depth" in action.detail

    summary, tail = sent(service, sid)
    assert f"Ship the parser rewrite {MODEL}" in summary  # the last merge's narrative is used
    summarized = [path for path in touched if path not in tail]
    assert len(summarized) > len(touched) // 2
    assert [path for path in summarized if path not in summary] == []


def test_parts_still_too_large_at_depth_3_get_the_extractive_summary(
    tmp_path, isolated_dirs, server
):
    service, sid, touched, action = compacted(tmp_path, isolated_dirs, server, 1_500)

    bodies = [r.body for r in server.requests]
    assert bodies and max(request_tokens(b) for b in bodies) <= 1_500
    merges = [b for b in bodies if "# Part 1 of 2" in b["messages"][0]["content"]]
    assert len(merges) == 7  # every split down to depth 3 was merged back
    assert "part(s) summarized extractively" in action.detail
    assert "split to depth 3" in action.detail
    summary, tail = sent(service, sid)
    assert [path for path in touched if path not in tail and path not in summary] == []
