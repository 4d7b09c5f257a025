"""Issue 21: the quality check after every compaction. A model's summary that leaves out exact
error lines (its long narrative took their room) is refused in favour of the extractive one, and
`detail` says so. A real OpenAI-shaped server on 127.0.0.1 (tests/model_servers.py), a real
SQLite store; the oracles are the error lines this test wrote and the request context/assemble
builds."""

from __future__ import annotations

import json

import pytest

from tests.appending import append
from tests.assembling import AssembleInput, assemble_context
from tests.model_servers import GOOD_ANSWER, ModelServer
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart
from tokend.service.app import open_service
from tokend.service.compaction.tiers import compact

KEY_ENV = "TOKEND_TEST_SUMMARY_KEY"


@pytest.fixture
def server():
    openai = ModelServer("openai").start()
    yield openai
    openai.stop()


def _configure(isolated_dirs, base_url: str, model: str) -> None:
    folder = isolated_dirs / "xdg_config_home" / "tokend"
    folder.mkdir(parents=True, exist_ok=True)
    table = {
        "chain": ["openai", "extractive"],
        "openai_base_url": base_url,
        "openai_model": model,
        "openai_api_key_env": KEY_ENV,
    }
    lines = ["[summarizer]"] + [f"{k} = {json.dumps(v)}" for k, v in table.items()]
    (folder / "config.toml").write_text("\n".join(lines) + "\n")


def _failing_runs(service, sid, runs: int) -> list[str]:
    """`runs` failing commands, each with its own exact error line; returns the lines."""
    errors = []
    for i in range(runs):
        append(service, sid, "user", [TextPart(f"try build {i} again")])
        call = ToolCallPart(f"b{i}", "Bash", {"command": f"make target_{i}"})
        append(service, sid, "assistant", [call])
        error = (
            f"error: target_{i} failed: undefined reference to `symbol_{i}' in object "
            f"build/obj_{i}.o while linking the release binary for platform variant {i}; "
            f"see the linker map build/map_{i}.txt for the unresolved chain"
        )
        errors.append(error)
        result = ToolResultPart(f"b{i}", "Bash", f"{error}\nExit code 2", is_error=True)
        append(service, sid, "user", [result])
        append(service, sid, "assistant", [TextPart(f"build {i} failed. " + "noted " * 300)])
    return errors


def _run(tmp_path, isolated_dirs, server, monkeypatch, model: str):
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    _configure(isolated_dirs, server.base_url, model)
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    errors = _failing_runs(service, sid, 60)
    outcome = compact(service, sid, "full")
    action = outcome.actions[-1]
    assembled = assemble_context(service, sid, AssembleInput(format="openai"))
    seen = "\n".join(str(m.get("content")) for m in assembled.messages)
    service.close()
    return action, errors, seen


def test_a_model_summary_that_leaves_out_error_lines_is_refused_for_the_extractive_one(
    tmp_path, isolated_dirs, server, monkeypatch
):
    action, errors, seen = _run(tmp_path, isolated_dirs, server, monkeypatch, "long-writer")
    assert action.kind == "full"
    assert [r.body["model"] for r in server.requests] == ["long-writer"]
    assert "openai:long-writer: used" in action.detail  # its answer passed the answer checks
    assert "quality check: the openai:long-writer summary left out" in action.detail
    assert "error line" in action.detail
    assert "refused in favour of the extractive summary" in action.detail
    assert "-token extractive summary; kept" in action.detail
    assert all(error in seen for error in errors)
    assert "More detail. More detail." not in seen  # the refused narrative is not sent


def test_a_model_summary_that_keeps_everything_passes_the_check(
    tmp_path, isolated_dirs, server, monkeypatch
):
    action, errors, seen = _run(tmp_path, isolated_dirs, server, monkeypatch, "good-writer")
    assert "quality check passed: 60/60 user messages" in action.detail, action.detail
    assert "60/60 error lines present" in action.detail
    assert GOOD_ANSWER.format(model="good-writer").strip() in seen
    assert all(error in seen for error in errors)


def test_after_three_failures_in_a_row_a_summarizer_is_not_called_again(
    tmp_path, isolated_dirs, server, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    _configure(isolated_dirs, server.base_url, "fail-500")
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    other = service.sessions.create_session("gpt-4o").id
    details = []
    for _ in range(4):
        _failing_runs(service, sid, 15)
        details.append(compact(service, sid, "full").actions[-1].detail)
    assert [r.body["model"] for r in server.requests] == ["fail-500"] * 3
    assert "openai:fail-500: HTTP 500" in details[0]
    assert "failed 3 times in a row in this session" not in details[1]
    assert "failed 3 times in a row in this session: not called again" in details[2]
    assert "openai:fail-500: skipped (failed 3 times in a row in this session)" in details[3]
    assert "extractive: used" in details[3]
    # Another session still asks it.
    _failing_runs(service, other, 15)
    compact(service, other, "full")
    assert len(server.requests) == 4
    service.close()


def test_a_summary_refused_by_the_check_counts_as_a_failure(
    tmp_path, isolated_dirs, server, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    _configure(isolated_dirs, server.base_url, "long-writer")
    service = open_service(None, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    sid = service.sessions.create_session("gpt-4o").id
    details = []
    for _ in range(4):
        _failing_runs(service, sid, 60)
        details.append(compact(service, sid, "full").actions[-1].detail)
    assert [r.body["model"] for r in server.requests] == ["long-writer"] * 3
    assert all("refused in favour of the extractive summary" in d for d in details[:3])
    assert "openai:long-writer: failed 3 times in a row in this session, not called" in details[2]
    assert "openai:long-writer: skipped (failed 3 times in a row" in details[3]
    service.close()
