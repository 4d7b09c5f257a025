"""A transcript's lines as JSON records: each non-blank line's object; a line that is not one (cut,
half written) is skipped and counted, with its number. Pure (json only)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Records:
    """A transcript's JSON records, and how many non-blank lines were not (cut or half written)."""

    records: list[Mapping[str, Any]]
    skipped: int = 0
    first_skipped: int | None = None  # the first skipped line's number (1-based)
    skipped_lines: tuple[int, ...] = ()  # the first MAX_LINE_NUMBERS of them


MAX_LINE_NUMBERS = 10


def read_records(lines: Iterable[bytes | str], first_number: int = 1) -> Records:
    """The JSON object on each non-blank line; other lines are skipped and counted (their
    numbers kept, the first line being `first_number`)."""
    records: list[Mapping[str, Any]] = []
    skipped, first_skipped = 0, None
    numbers: list[int] = []
    for number, line in enumerate(lines, start=first_number):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
            continue
        skipped += 1
        first_skipped = first_skipped or number
        if len(numbers) < MAX_LINE_NUMBERS:
            numbers.append(number)
    return Records(records, skipped, first_skipped, tuple(numbers))
