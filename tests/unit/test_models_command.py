"""`tokend models list`, called as the CLI calls it, on litellm's real catalog.

Expected rows are litellm's figures written out by hand (gpt-4o-mini: 128,000-token window, 16,384
max output, $0.15 / $0.60 per million tokens; claude-opus-4-5: 200,000, 64,000, $5 / $25).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tokend.commands.models import list_models


@pytest.fixture(autouse=True)
def in_a_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # list_models reads the workspace's .tokend.toml
    return tmp_path


def _run(pattern: str | None, as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    status = list_models(pattern, as_json, out)
    return status, out.getvalue()


def test_a_substring_matches_in_any_case_and_rows_are_aligned() -> None:
    status, text = _run("4O-MINI")
    assert status == 0
    header, *rows = text.splitlines()
    assert header.split() == "name window max output input $/Mtok output $/Mtok tokenizer".split()
    assert rows and all("4o-mini" in row.split()[0].lower() for row in rows)
    mini = next(row for row in rows if row.split()[0] == "gpt-4o-mini")
    assert mini.split() == ["gpt-4o-mini", "128,000", "16,384", "0.15", "0.60", "o200k_base"]
    # Right-aligned numbers end where their header ends; the tokenizer column starts where its does.
    for title, cell in (("window", "128,000"), ("output $/Mtok", "0.60")):
        assert mini.index(cell) + len(cell) == header.index(title) + len(title)
    assert mini.index("o200k_base") == header.index("tokenizer")


def test_a_glob_matches_whole_names() -> None:
    status, text = _run("claude-opus-4-?", as_json=True)
    assert status == 0
    listed = json.loads(text)
    assert listed and all(m["name"].startswith("claude-opus-4-") for m in listed)
    assert all(len(m["name"]) == len("claude-opus-4-5") for m in listed)
    opus = next(m for m in listed if m["name"] == "claude-opus-4-5")
    assert opus == {
        "name": "claude-opus-4-5",
        "provider": "anthropic",
        "contextWindow": 200_000,
        "maxOutputTokens": 64_000,
        "inputUsdPerMtok": 5.0,
        "outputUsdPerMtok": 25.0,
        "tokenizer": "claude-v3",
    }


def test_no_pattern_lists_the_whole_catalog_sorted() -> None:
    status, text = _run(None, as_json=True)
    names = [m["name"] for m in json.loads(text)]
    assert status == 0 and len(names) > 1000
    assert names == sorted(names, key=str.lower)
    assert {"gpt-4o", "claude-opus-4-6", "gemini-2.5-pro"} <= set(names)


def test_a_model_the_workspace_declares_is_listed(in_a_workspace: Path) -> None:
    (in_a_workspace / ".tokend.toml").write_text(
        '[models."acme-coder-7"]\ncontext_window = 64000\nmax_output_tokens = 8000\n'
        "input_cost_per_token = 0.0000004\n"
    )
    status, text = _run("acme")
    assert status == 0
    (row,) = text.splitlines()[1:]
    assert row.split() == ["acme-coder-7", "64,000", "8,000", "0.40", "-", "estimate"]


def test_nothing_matching_says_so_and_fails() -> None:
    status, text = _run("no-such-model-anywhere")
    assert status == 1 and "no-such-model-anywhere" in text
    status, text = _run("no-such-model-*", as_json=True)
    assert status == 1 and json.loads(text) == []
