"""The quality check after every compaction (core.compaction.summary_check), applied to a written summary.

A summary a model helped write that leaves out what must survive (the user's words within their
budget, a file of the artifact index, an exact error line) is refused in favour of the
extractive one when that one leaves out less; the outcome, passed or not, is one clause of the
action's `detail`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tokend.core.compaction.digest import Digest, digest_from_json
from tokend.core.compaction.plan import WindowSplit
from tokend.core.compaction.summary_check import Check, check_summary
from tokend.core.models.catalog import ModelInfo
from tokend.core.types import CompactionPart
from tokend.service.compaction.ports import CompactionService
from tokend.service.compaction.summarizers import TRIPPED, WrittenSummary, count_failure


@dataclass(frozen=True)
class Checked:
    written: WrittenSummary
    note: str  # the detail's clause


def _check(
    service: CompactionService,
    model: ModelInfo,
    written: WrittenSummary,
    split: WindowSplit,
    words: int,
) -> Check:
    part = next(sp.part for sp in written.change.message.parts)
    assert isinstance(part, CompactionPart)
    digest = digest_from_json(part.digest) if part.digest is not None else Digest()
    count = service.models.counter(model).count_texts
    return check_summary(digest, part.summary, split.tail, count, words)


def checked_summary(
    service: CompactionService,
    session_id: str,
    model: ModelInfo,
    split: WindowSplit,
    written: WrittenSummary,
    words: int,
    extractive: Callable[[], WrittenSummary],
) -> Checked:
    """`written` checked (run it in a worker thread: it counts); `extractive` writes the
    summary without the model's narrative, asked only when `written` fails and had one. A
    refusal counts as a failure of the model's step (service.compaction.summarizers' breaker)."""
    check = _check(service, model, written, split, words)
    if written.summarizer != "extractive" and check.passed:
        service.summarizer_failures.pop((session_id, written.summarizer), None)
    if check.passed:
        return Checked(written, f"quality check passed: {check.found()}")
    if written.summarizer == "extractive":
        return Checked(written, f"quality check: {check.gaps()} not present, left out for room")
    plain = extractive()
    second = _check(service, model, plain, split, words)
    if second.missing < check.missing:
        tripped = count_failure(service, session_id, written.summarizer)
        return Checked(
            plain,
            f"quality check: the {written.summarizer} summary left out {check.gaps()}; refused "
            f"in favour of the extractive summary ({second.found()})"
            + (f"; {written.summarizer}: {TRIPPED}, not called again" if tripped else ""),
        )
    service.summarizer_failures.pop((session_id, written.summarizer), None)
    return Checked(
        written,
        f"quality check: the {written.summarizer} summary left out {check.gaps()}, no more than "
        "the extractive one would; kept",
    )
