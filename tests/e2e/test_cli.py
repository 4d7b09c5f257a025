"""The `tokend` command as a user runs it, on real files: `tokend.cli.main` in this process
(tests/in_process.py), and `python -m tokend` as a process for the CLI path's own test."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import BIG_SESSION, sessions_dir_or_skip, tokend_env
from tests.in_process import tokend_cli


def tokend(*args: str, cwd, **env: str) -> subprocess.CompletedProcess[str]:
    """`tokend ARGS` run in this process (tests/in_process.py). `tokend status` too: the
    background start of a daemon it may make is off in every test (TOKEND_START_DAEMON=0,
    tests/conftest.py), and that start keeps its process tests (tests/e2e/test_statusline_status_start.py)."""
    return tokend_cli(*args, cwd=cwd, env=tokend_env(**env))


def tokend_process(
    *args: str, cwd, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokend", *args],
        cwd=cwd,
        env=tokend_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_models_show(tmp_path):
    """The CLI path's end-to-end test: `python -m tokend` as a process."""
    shown = tokend_process("models", "show", "gpt-4o", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    figures = json.loads(shown.stdout)
    assert figures["contextWindow"] == 128_000
    assert figures["maxOutputTokens"] == 16_384
    assert figures["tokenizer"] == "o200k_base"
    table = tokend_process("models", "show", "claude-opus-4-6", cwd=tmp_path)
    assert "1,000,000" in table.stdout and "contextWindow" in table.stdout


def test_a_workspace_declares_a_model_the_catalog_lacks(tmp_path):
    missing = tokend("models", "show", "acme-coder-7", cwd=tmp_path)
    assert missing.returncode == 2
    assert ".tokend.toml" in missing.stderr and "config.toml" in missing.stderr
    (tmp_path / ".tokend.toml").write_text(
        '[models."acme-coder-7"]\ncontext_window = 64000\nmax_output_tokens = 8000\n'
        'tokenizer = "cl100k_base"\n'
    )
    shown = tokend("models", "show", "acme-coder-7", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["contextWindow"] == 64_000


def test_replay_json_beats_the_goals(tmp_path):
    sessions_dir_or_skip()
    replayed = tokend("replay", str(BIG_SESSION), "--json", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    report = json.loads(replayed.stdout)
    first = report["calls"][0]
    assert first["predicted"] is None and first["errorPct"] is None
    summary = report["summary"]
    assert summary["calls"] == 150
    assert summary["medianAbsErrorPct"] <= 0.1
    assert summary["p90AbsErrorPct"] <= 0.6
    readable = tokend("replay", str(BIG_SESSION), cwd=tmp_path)
    assert "median" in readable.stdout.lower()


def test_replay_of_a_missing_file_says_so(tmp_path):
    replayed = tokend("replay", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert replayed.returncode == 2
    assert "nope.jsonl" in replayed.stdout + replayed.stderr


def test_status_without_a_session_explains_what_to_do(tmp_path):
    status = tokend("status", cwd=tmp_path)
    assert status.returncode == 2
    assert "tokend import claude-code" in status.stderr
    daemon = tokend("status", "--daemon", cwd=tmp_path)
    assert daemon.returncode == 1 and "no tokend daemon" in daemon.stdout


def test_import_then_status_and_context(tmp_path):
    sessions_dir_or_skip()
    db = {"TOKEND_DATABASE_URL": f"sqlite:///{tmp_path}/cli.sqlite3"}
    imported = tokend(
        "import", "claude-code", str(BIG_SESSION), "--workspace", ".", "--json", cwd=tmp_path, **db
    )
    assert imported.returncode == 0, imported.stderr
    outcome = json.loads(imported.stdout)
    assert (outcome["calls"], outcome["compactions"]) == (152, 1)
    status = tokend("status", "--json", cwd=tmp_path, **db)
    assert status.returncode == 0, status.stderr
    snapshot = json.loads(status.stdout)
    assert snapshot["sessionId"] == outcome["sessionId"]
    assert snapshot["usedTokens"] == outcome["usedTokens"]
    assert "/ 200,000 tokens" in tokend("status", cwd=tmp_path, **db).stdout
    table = tokend("context", cwd=tmp_path, **db).stdout
    assert "messages" in table and "free space" in table


def test_messages_name_what_a_person_types(tmp_path):
    """A typo gets the catalog's close names; `models show` says `estimate` as `models list`
    does; an unknown session points at `tokend sessions`, not at the protocol's session/create."""
    typo = tokend("models", "show", "claude-sonnet-4", cwd=tmp_path)
    assert typo.returncode == 2
    assert 'Did you mean "claude-sonnet-4-6"' in typo.stderr, typo.stderr
    assert tokend("models", "show", "gpt5", cwd=tmp_path).stderr.count('"gpt-5"') == 1
    shown = tokend("models", "show", "gemini-2.5-pro", cwd=tmp_path).stdout  # no tokenizer
    assert "None" not in shown
    assert next(line for line in shown.splitlines() if line.startswith("tokenizer")).endswith(
        "estimate"
    )
    missing = tokend("status", "--session", "nope", cwd=tmp_path)
    assert missing.returncode == 2
    assert "`tokend sessions`" in missing.stderr and "session/create" not in missing.stderr


def test_import_refuses_a_damaged_line_by_number_and_leaves_a_half_written_last_line(tmp_path):
    lines = BIG_SESSION.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join([*lines[:500], lines[500][:100], *lines[501:]]) + "\n")
    db = {"TOKEND_DATABASE_URL": f"sqlite:///{tmp_path}/cli.sqlite3"}
    refused = tokend("import", "claude-code", str(damaged), cwd=tmp_path, **db)
    assert refused.returncode == 2
    assert "line 501 is not a JSON record" in refused.stderr
    assert refused.stderr.rstrip().endswith("imports the rest.")  # the whole text, not cut
    assert "nothing was imported" in refused.stderr
    listed = tokend("sessions", "--all-workspaces", "--json", cwd=tmp_path, **db)
    assert json.loads(listed.stdout)["sessions"] == []
    skipped = tokend(
        "import", "claude-code", "--skip-bad-lines", str(damaged), "--json", cwd=tmp_path, **db
    )
    assert skipped.returncode == 0, skipped.stderr
    said = json.loads(skipped.stdout)
    assert (said["skippedLines"], said["skippedLineNumbers"]) == (1, [501])

    writing = tmp_path / "writing.jsonl"  # the agent is writing its last record right now
    writing.write_text("\n".join(lines[:300]) + "\n" + lines[300][:50])
    other = {"TOKEND_DATABASE_URL": f"sqlite:///{tmp_path}/other.sqlite3"}
    half = tokend("import", "claude-code", str(writing), "--json", cwd=tmp_path, **other)
    assert half.returncode == 0, half.stderr
    said = json.loads(half.stdout)
    assert said["unfinishedLastLine"] is True and said["skippedLines"] == 0


def test_an_imported_sessions_time_is_the_transcripts_span(tmp_path):
    """Wall time from the transcript's own timestamps (before: the seconds the import took);
    no API time, which a Claude Code transcript does not record."""
    from datetime import datetime

    stamps = [
        datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
        for r in map(json.loads, filter(str.strip, BIG_SESSION.read_text().splitlines()))
        if r.get("type") in ("user", "assistant") and r.get("timestamp")
    ]
    span_ms = round((max(stamps) - min(stamps)).total_seconds() * 1000)
    db = {"TOKEND_DATABASE_URL": f"sqlite:///{tmp_path}/cli.sqlite3"}
    imported = tokend("import", "claude-code", str(BIG_SESSION), "--json", cwd=tmp_path, **db)
    assert imported.returncode == 0, imported.stderr
    sid = json.loads(imported.stdout)["sessionId"]
    status = tokend("status", "--session", sid, "--json", cwd=tmp_path, **db)
    time = json.loads(status.stdout)["time"]
    assert time["wallMs"] == span_ms  # 4,180,163 ms: 1 h 9 min 40 s
    assert time["apiMs"] is None


def test_compact_help_says_what_it_does_and_what_it_refuses(tmp_path):
    """`tokend compact --help` itself (not only `tokend --help`'s one line) says it also
    summarizes, and that a followed session is the agent's."""
    shown = tokend("compact", "--help", cwd=tmp_path)
    text = " ".join(shown.stdout.split())
    assert shown.returncode == 0 and "summarize older turns" in text, shown.stdout
    assert "refused" in text and "tokend fork" in text
