"""kill -9 during appends and compactions, a sample of the soak (tests/daemon/kill9_soak.py;
its full count runs in `make bench`, bench/kill9.py): SAMPLE kills on the real `tokend serve`,
half of them aimed at the end of a compaction (its writes), then restarts; nothing lost,
nothing duplicated, nothing half-applied.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.kill9_soak import CHAINS, soak

pytestmark = pytest.mark.slow

SAMPLE = 8  # kills: 4 per chain, 2 aimed at a compaction's writes and 2 anywhere in it


@pytest.fixture
def workdir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="tkk-"))  # short: unix socket paths are ~104 bytes
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_kill_9_during_appends_and_compactions_loses_duplicates_and_half_applies_nothing(
    workdir: Path,
) -> None:
    results = soak(workdir, SAMPLE)
    assert [r.append_problems for r in results] == [{}] * CHAINS
    assert [r.compaction_problems for r in results] == [[]] * CHAINS
    assert sum(r.trials for r in results) == SAMPLE
