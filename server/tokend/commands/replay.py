"""`tokend replay FILE [--json]`: replay a Claude Code transcript and compare the predicted input of
every provider call with the usage the provider reported (tokens; errors in percent)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from tokend.core.calibration import Calibrator
from tokend.core.estimate import DEFAULT_CHARS_PER_TOKEN, classify, estimate_tokens, image_tokens
from tokend.core.replay import CalibratedEstimator, ReplayResult, replay
from tokend.core.transcript import parse_transcript


def calibrated_estimator(calibration_state: Mapping[str, Any] | None = None) -> CalibratedEstimator:
    """Our estimator: core.estimate with a calibrator, cold or restored from a persisted state."""
    calibrator = Calibrator.from_state(calibration_state or {}, DEFAULT_CHARS_PER_TOKEN)
    return CalibratedEstimator(calibrator, estimate_tokens, classify, image_tokens("anthropic"))


def replay_file(path: Path, calibration_state: Mapping[str, Any] | None = None) -> ReplayResult:
    """Parse and replay one transcript file (raises OSError / ValueError when unreadable)."""
    with path.open(encoding="utf-8") as lines:
        events = parse_transcript(lines)
    return replay(events, calibrated_estimator(calibration_state))


def run_replay(
    path: Path,
    as_json: bool,
    out: TextIO,
    calibration_state: Mapping[str, Any] | None = None,
) -> int:
    """Print the replay of `path` to `out`: exactly ReplayResult.to_json() with `as_json`, else a
    table and a summary. Returns 0, or 2 when the file cannot be read or parsed (message on `out`)."""
    try:
        result = replay_file(path, calibration_state)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        out.write(f"tokend replay: cannot read {path}: {error}\n")
        return 2
    if as_json:
        out.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        out.write(format_table(result))
    return 0


def format_table(result: ReplayResult) -> str:
    """One line per provider call (predicted and actual input tokens, signed error), then a summary."""
    lines = [f"{'call':>5}  {'predicted':>10}  {'actual':>10}  {'error':>8}"]
    for number, call in enumerate(result.calls, start=1):
        predicted = "-" if call.predicted is None else f"{call.predicted:,}"
        error = "-" if call.error_pct is None else f"{call.error_pct:+.2f}%"
        lines.append(f"{number:>5}  {predicted:>10}  {call.actual:>10,}  {error:>8}")
    summary = result.summary
    lines.append("")
    if summary.calls == 0:
        lines.append("No call had an earlier call in its window: nothing to compare.")
    else:
        lines.append(
            f"{summary.calls} calls compared (first call of each window left out): "
            f"|error| median {summary.median_abs_error_pct:.3f}%, "
            f"p90 {summary.p90_abs_error_pct:.3f}%, max {summary.max_abs_error_pct:.3f}%"
        )
    return "\n".join(lines) + "\n"
