"""Replay of real Claude Code sessions: the gauge's prediction against the provider's usage."""

from __future__ import annotations

import io
import json
from pathlib import Path

from tests.conftest import session_file as _session_path
from tokend.commands.replay import replay_file, run_replay
from tokend.core.transcripts.events import (
    CompactionBoundary,
    ProviderCall,
    TranscriptMessage,
    parse_transcript,
)
from tokend.core.transcripts.replay import PLAIN_RULES, PlainEstimator, replay
from tokend.core.types import ReasoningPart, TextPart, ToolResultPart, Usage


def _call(context: int, output: int) -> ProviderCall:
    return ProviderCall("m", "r", "model-x", Usage(input_tokens=context, output_tokens=output))


def test_tool_heavy_replay_predicts_every_call_but_the_first_within_2_percent() -> None:
    result = replay_file(_session_path("tool_heavy.jsonl"))  # through the live service

    assert [call.actual for call in result.calls] == [25801, 26007, 26507, 27666]
    assert result.calls[0].predicted is None and result.calls[0].error_pct is None
    assert result.summary.calls == 3
    assert all(abs(call.error_pct) < 2.0 for call in result.calls[1:])
    assert result.summary.median_abs_error_pct <= result.summary.p90_abs_error_pct
    assert result.summary.p90_abs_error_pct <= result.summary.max_abs_error_pct


def test_short_session_has_nothing_to_compare() -> None:
    result = replay_file(_session_path("short.jsonl"))

    assert len(result.calls) == 1 and result.calls[0].predicted is None
    assert result.summary.calls == 0 and result.summary.median_abs_error_pct is None


def test_next_input_is_previous_context_plus_output_plus_new_messages() -> None:
    events = [
        _call(context=1000, output=300),
        TranscriptMessage("assistant", (ReasoningPart("x" * 400), TextPart("y" * 800))),
        TranscriptMessage("tool", (ToolResultPart("t", "Read", "z" * 400),)),
        _call(context=1400, output=10),
    ]

    result = replay(events, PlainEstimator(), PLAIN_RULES)

    # 1000 re-sent + 300 output (thinking included) + 400 chars / 4
    assert result.calls[1].predicted == 1400
    assert result.calls[1].error_pct == 0.0


def test_a_stale_streaming_output_count_is_replaced_by_the_content_estimate() -> None:
    events = [
        _call(context=1000, output=1),  # the record was written before the final usage arrived
        TranscriptMessage("assistant", (TextPart("w" * 4000),)),
        _call(context=2001, output=10),
    ]

    trusting = replay(events, PlainEstimator(), PLAIN_RULES)
    repairing = replay(events, PlainEstimator())

    assert trusting.calls[1].predicted == 1001
    assert repairing.calls[1].predicted == 2000


def test_compaction_starts_a_new_window_without_prediction() -> None:
    events = [
        _call(context=150_000, output=100),
        CompactionBoundary(pre_tokens=150_100),
        TranscriptMessage("user", (TextPart("summary " * 100),), compact_summary=True),
        _call(context=20_000, output=100),
        _call(context=20_100, output=100),
    ]

    result = replay(events, PlainEstimator(), PLAIN_RULES)

    assert [call.predicted for call in result.calls] == [None, None, 20_100]
    assert result.summary.calls == 1


def test_the_live_gauge_beats_chars_over_4_on_the_long_session() -> None:
    path = _session_path("258c7280-ae70-4798-800f-63464d01a85d.jsonl")
    events = parse_transcript(path.read_text().splitlines())

    ours = replay_file(path).summary  # the service a user's editor talks to
    baseline = replay(events, PlainEstimator(), PLAIN_RULES).summary

    assert ours.calls == baseline.calls == 150  # 152 calls, 2 windows
    assert ours.median_abs_error_pct < baseline.median_abs_error_pct
    assert ours.p90_abs_error_pct < baseline.p90_abs_error_pct
    # The figures of the estimator-only replay this path replaced: median 0.050%, p90 0.515%.
    assert ours.median_abs_error_pct <= 0.0505
    assert ours.p90_abs_error_pct <= 0.5155


def test_cli_json_output_has_the_documented_shape() -> None:
    out = io.StringIO()

    code = run_replay(_session_path("tool_heavy.jsonl"), as_json=True, out=out)

    assert code == 0
    data = json.loads(out.getvalue())
    assert set(data) == {"calls", "summary"}
    assert all(set(call) == {"predicted", "actual", "errorPct"} for call in data["calls"])
    assert data["calls"][0] == {"predicted": None, "actual": 25801, "errorPct": None}
    assert set(data["summary"]) == {
        "calls",
        "medianAbsErrorPct",
        "p90AbsErrorPct",
        "maxAbsErrorPct",
    }
    assert data["summary"]["calls"] == 3


def test_cli_table_ends_with_a_summary_line() -> None:
    out = io.StringIO()

    assert run_replay(_session_path("tool_heavy.jsonl"), as_json=False, out=out) == 0

    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["call", "predicted", "actual", "error"]
    assert lines[-1].startswith("3 calls compared") and "median" in lines[-1]


def test_cli_reports_an_unreadable_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type": "user"}\nnot json\n')
    out = io.StringIO()

    assert run_replay(broken, as_json=False, out=out) == 2
    assert "line 2" in out.getvalue()
