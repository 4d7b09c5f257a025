"""Gauge accuracy: replay of real Claude Code sessions, predicted input vs the provider's usage.

Sessions: the three transcripts of shared/data/claude-code-sessions (claude-opus-4-6, 200k window),
found beside the repository at run time. Each provider call (but the first of each window) is
predicted from the previous one and compared with input + cache read + cache write.

Methods, all in the same run:
  ours          `tokend replay`: the transcript imported call by call into the live service on a
                temporary store (the gauge, counting and calibration an editor sees), starting
                from the estimator's priors as a new user's daemon does
  chars/4       the plain formula: previous context + reported output + len(rendered text) / 4
  chars/4 JSON  the plain formula with len(JSON of each user record's content) / 4: the JSON
                syntax and escapes of tool_result blocks inflate the count a little
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tokend.commands.replay import replay_file
from tokend.core.transcripts.events import parse_transcript
from tokend.core.transcripts.replay import PLAIN_RULES, PlainEstimator, replay
from tokend.core.usage.accounting import EstimateError, summarize_abs_errors

SESSIONS_DIR = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "claude-code-sessions"
)
SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "tool_heavy.jsonl",
    "short.jsonl",
)
REPEATS = 3


def _raw_json_baseline(lines: Sequence[str]) -> list[float]:
    """Signed errors (percent) of the plain formula counting chars/4 of the raw JSON content of
    every user record since the previous call (responses grouped by (message.id, requestId))."""
    records = [json.loads(line) for line in lines if line.strip()]
    last_usage: dict[tuple[str, str], dict[str, int]] = {}
    for record in records:
        if record.get("type") == "assistant":
            last_usage[(record["message"]["id"], record.get("requestId"))] = record["message"][
                "usage"
            ]
    errors: list[float] = []
    previous: dict[str, int] | None = None
    added_chars = 0
    seen: set[tuple[str, str]] = set()
    for record in records:
        kind = record.get("type")
        if kind == "system" and record.get("subtype") == "compact_boundary":
            previous, added_chars = None, 0
        elif kind == "user" and not record.get("isSidechain"):
            added_chars += len(json.dumps(record["message"]["content"], ensure_ascii=False))
        elif kind == "assistant" and not record.get("isSidechain"):
            key = (record["message"]["id"], record.get("requestId"))
            if key in seen:
                continue
            seen.add(key)
            usage = last_usage[key]
            actual = _context(usage)
            if previous is not None:
                predicted = _context(previous) + previous["output_tokens"] + round(added_chars / 4)
                errors.append(EstimateError(predicted, actual).error_pct)
            previous, added_chars = usage, 0
    return errors


def _context(usage: dict[str, int]) -> int:
    return (
        usage["input_tokens"]
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
    )


def _timed(run: Callable[[], Any]) -> tuple[Any, float]:
    """Result and median wall time in ms over REPEATS runs."""
    times, result = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = run()
        times.append((time.perf_counter() - start) * 1000)
    return result, statistics.median(times)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _methods(path: Path, lines: Sequence[str], events: list[Any]) -> dict[str, Callable[[], Any]]:
    """Each method's replay of one session, returning an object with the summary figures."""
    return {
        "ours": lambda: replay_file(path).summary,
        "chars/4": lambda: replay(events, PlainEstimator(), PLAIN_RULES).summary,
        "chars/4 JSON": lambda: summarize_abs_errors(abs(e) for e in _raw_json_baseline(lines)),
    }


def run() -> str:
    if not SESSIONS_DIR.is_dir():
        return f"### Gauge accuracy (replay)\n\nSkipped: {SESSIONS_DIR.name} not found beside the repo.\n"
    rows = [
        "| session | method | calls compared | median abs err % | p90 abs err % | max abs err % "
        "| replay ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    long_session: dict[str, Any] = {}
    for name in SESSIONS:
        path = SESSIONS_DIR / name
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        events, parse_ms = _timed(lambda lines=lines: parse_transcript(lines))
        label = name if len(name) < 20 else name[:8] + "… (2.7 MB)"
        for method, replay_run in _methods(path, lines, events).items():
            summary, replay_ms = _timed(replay_run)
            if name == SESSIONS[0]:
                long_session[method] = summary
            calls = summary.calls if hasattr(summary, "calls") else summary.count
            rows.append(
                f"| {label} (parse {parse_ms:.0f} ms) | {method} | {calls} "
                f"| {_fmt(summary.median_abs_error_pct)} | {_fmt(summary.p90_abs_error_pct)} "
                f"| {_fmt(summary.max_abs_error_pct)} | {replay_ms:.1f} |"
            )
    out = ["### Gauge accuracy (replay of real Claude Code sessions)", "", *rows, ""]
    if "ours" in long_session:
        ours, base = long_session["ours"], long_session["chars/4"]
        out.append(
            f"Long session: median |error| {_fmt(ours.median_abs_error_pct)}% vs "
            f"{_fmt(base.median_abs_error_pct)}% for chars/4 "
            f"({base.median_abs_error_pct / ours.median_abs_error_pct:.1f}x lower), "
            f"p90 {_fmt(ours.p90_abs_error_pct)}% vs {_fmt(base.p90_abs_error_pct)}% "
            f"({base.p90_abs_error_pct / ours.p90_abs_error_pct:.1f}x lower)."
        )
        out.append("")
    out.append(
        "Measured: each provider call predicted from the previous call's usage plus an estimate of "
        "what was added since, against input + cache read + cache write as reported; the first call "
        "of each window is left out; ours runs the live service (import, counting, calibration "
        f"from the priors, SQLite writes included in its time); times are medians of {REPEATS} runs."
    )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(run())
