"""The [summarizer] chain against real HTTP servers on 127.0.0.1 (tests/model_servers.py):
OpenAI- and Anthropic-shaped, failing, slow and garbage ones, on a real SQLite store.

Oracles: what the servers recorded, the texts this test wrote (the user's words, the paths in
its tool calls, the narrative the server answered), the request `context/assemble` builds."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tests.model_servers import GOOD_ANSWER, ModelServer
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
from tokend.service.app import open_service
from tokend.service.compaction.tiers import compact

KEY_ENV = "TOKEND_TEST_SUMMARY_KEY"


@pytest.fixture
def servers():
    openai, anthropic = ModelServer("openai").start(), ModelServer("anthropic").start()
    yield openai, anthropic
    openai.stop()
    anthropic.stop()


def _configure(isolated_dirs, **table) -> None:
    folder = isolated_dirs / "xdg_config_home" / "tokend"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["[summarizer]"] + [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    (folder / "config.toml").write_text("\n".join(lines) + "\n")


def _work(service, sid, turns=12):
    """A conversation with file tools, a failing command and long answers; returns what the
    user typed, the files touched and the exact error line."""
    typed, files = [], []
    error = "ImportError: cannot import name 'Grammar' from 'parser.core'"
    for i in range(turns):
        said = f"step {i}: port rule {i} of the grammar, and do not add any dependency"
        typed.append(said)
        path = f"src/parser/rule_{i}.py"
        files.append(path)
        append(service, sid, "user", [TextPart(said)])
        call = ToolCallPart(
            f"e{i}", "Edit", {"file_path": path, "old_string": "a", "new_string": "b"}
        )
        append(service, sid, "assistant", [TextPart("editing " * 500), call])
        append(service, sid, "user", [ToolResultPart(f"e{i}", "Edit", "updated")])
        run = ToolCallPart(f"b{i}", "Bash", {"command": f"pytest tests/test_rule_{i}.py"})
        append(service, sid, "assistant", [run])
        output = f"{error}\nExit code 1" if i == turns - 1 else "1 passed\nExit code 0"
        append(
            service, sid, "user", [ToolResultPart(f"b{i}", "Bash", output, is_error=i == turns - 1)]
        )
        append(service, sid, "assistant", [TextPart(f"rule {i} ported. " + "details " * 800)])
    return typed, files, error


def _summary_text(service, sid) -> str:
    first = assemble_context(service, sid, AssembleInput(format="openai")).messages[0]
    assert first["role"] == "system"
    return str(first["content"])


def test_a_failing_small_model_falls_back_to_the_primary_and_the_index_stays_mechanical(
    tmp_path, isolated_dirs, servers, monkeypatch
):
    openai, _ = servers
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    _configure(
        isolated_dirs,
        chain=["openai", "extractive"],
        openai_base_url=openai.base_url,
        openai_model=["fail-500", "good-primary"],
        openai_api_key_env=KEY_ENV,
    )
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    typed, files, error = _work(service, sid)
    outcome = compact(service, sid, "full")
    action = outcome.actions[-1]
    assert action.kind == "full"
    # Each step reported, in order; the primary wrote the narrative.
    assert "openai:fail-500: HTTP 500" in action.detail
    assert "openai:good-primary: used" in action.detail
    assert "openai:good-primary summary" in action.detail
    assert [r.body["model"] for r in openai.requests] == ["fail-500", "good-primary"]
    sent = openai.requests[-1]
    assert sent.headers["authorization"] == "Bearer sk-test-not-a-real-key"
    prompt = sent.body["messages"][0]["content"]
    assert "## Next step" in prompt and typed[-1] in prompt
    assert sent.body["max_tokens"] >= 256
    # The model's narrative is in the summary; the user's words, every file and the exact
    # error are there too, added by tokend, not by the model (whose answer names none).
    summary = _summary_text(service, sid)
    narrative = GOOD_ANSWER.format(model="good-primary").strip()
    assert narrative in summary
    assert all(t in summary for t in typed[:-1])
    assert all(p in summary for p in files)
    assert error in summary
    service.close()


def test_slow_and_garbage_answers_fall_back_to_extractive_and_nothing_is_lost(
    tmp_path, isolated_dirs, servers
):
    openai, anthropic = servers
    _configure(
        isolated_dirs,
        chain=["anthropic", "openai", "extractive"],
        anthropic_base_url=anthropic.base_url,
        anthropic_model=["slow", "not-json", "no-sections", "empty"],
        openai_base_url=openai.base_url,
        openai_model=["cut", "too-long"],
        timeout_s=0.5,
    )
    db = tmp_path / "db.sqlite3"
    service = open_service(None, f"sqlite:///{db}")
    sid = service.sessions.create_session("gpt-4o").id
    typed, files, error = _work(service, sid)
    outcome = compact(service, sid, "full")
    action = outcome.actions[-1]
    assert action.kind == "full" and "extractive summary" in action.detail
    steps = action.detail.split("summarizers tried: ", 1)[1].split("; ")
    assert steps == [
        "anthropic:slow: no answer within 0.5 s",
        "anthropic:not-json: the answer is not JSON",
        'anthropic:no-sections: refused: no section "## Objective", "## Decisions", '
        '"## Work state", "## Next step"',
        "anthropic:empty: refused: an empty answer",
        "openai:cut: the answer was cut at maxTokens",
        steps[5],  # its token count depends on the tokenizer
        "extractive: used",
    ]
    assert steps[5].startswith("openai:too-long: refused: ") and "over the" in steps[5]
    assert anthropic.requests[0].path == "/v1/messages"
    assert anthropic.requests[0].headers["anthropic-version"]
    assert "x-api-key" not in anthropic.requests[0].headers  # no key set
    # History is never dropped: the extractive summary stands, every message is in the store.
    summary = _summary_text(service, sid)
    assert "## Next step" in summary and all(p in summary for p in files) and error in summary
    with sqlite3.connect(db) as connection:
        stored = connection.execute("SELECT count(*) FROM messages").fetchone()[0]
    assert stored == 12 * 6 + 1
    service.close()


def test_the_default_chain_calls_no_model_and_reports_nothing_new(tmp_path, servers):
    openai, anthropic = servers
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    _work(service, sid)
    action = compact(service, sid, "full").actions[-1]
    assert action.kind == "full" and "summarizers tried" not in action.detail
    assert openai.requests == [] and anthropic.requests == []
    service.close()


def test_a_chain_step_without_its_settings_is_skipped_and_said(tmp_path, isolated_dirs):
    _configure(isolated_dirs, chain=["client", "openai", "extractive"], openai_model="m")
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    _work(service, sid)
    action = compact(service, sid, "full").actions[-1]
    assert action.detail.endswith(
        "summarizers tried: client: skipped (no client connection asked for this compaction); "
        "openai: skipped ([summarizer] openai_base_url is not set); extractive: used"
    )
    service.close()
