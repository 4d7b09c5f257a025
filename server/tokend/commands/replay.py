"""`tokend replay FILE [--json]`: import a Claude Code transcript into a live TokendService on a
temporary store, call by call, and compare the gauge's prediction of every provider call with
the usage the provider reported (tokens; errors in percent).

This is the product's own path: the same counting, calibration and gauge a user's editor sees
(the calibration starts from the estimator's priors, as a new user's does).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TextIO

from tokend.core.errors import TokendError
from tokend.core.transcripts.replay import ReplayCall, ReplayResult, summarize_calls
from tokend.service.session.listeners import SessionEvent


def replay_file(path: Path) -> ReplayResult:
    """Replay one transcript through the live service (raises OSError / ValueError /
    TokendError when it cannot be read or imported)."""
    from tokend.commands.importer import import_events
    from tokend.service.app import open_app

    calls: list[ReplayCall] = []
    seen: set[str] = set()

    def record(event: SessionEvent) -> None:
        call = event.snapshot.last_call
        if call is not None and call.message_id not in seen:
            seen.add(call.message_id)
            calls.append(ReplayCall(call.predicted_tokens, call.context_tokens))

    with tempfile.TemporaryDirectory(prefix="tokend-replay-") as folder:
        app = open_app(None, f"sqlite:///{folder}/replay.sqlite3")
        try:
            app.service.listeners.subscribe_every(record)
            import_events(app.service, path)
        finally:
            app.close()
    return ReplayResult(tuple(calls), summarize_calls(calls))


def run_replay(path: Path, as_json: bool, out: TextIO) -> int:
    """Print the replay of `path` to `out`: exactly ReplayResult.to_json() with `as_json`, else a
    table and a summary. Returns 0, or 2 when the file cannot be read or parsed (message on `out`)."""
    try:
        result = replay_file(path)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        out.write(f"tokend replay: cannot read {path}: {error}\n")
        return 2
    except TokendError as error:
        out.write(f"tokend replay: cannot replay {path}: {error.message}\n")
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
