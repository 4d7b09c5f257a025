"""bench.repomap_eval's Aider row in a quick run: shown from the rows an earlier run kept when
REPOMAP_EVAL_AIDER=kept (the tuning trees' tables beside Aider without running it), never run."""

from __future__ import annotations

import pytest


def test_a_quick_run_shows_aider_only_from_kept_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.repomap_eval import aider_row

    monkeypatch.delenv("REPOMAP_EVAL_AIDER", raising=False)
    assert aider_row(quick=False) and not aider_row(quick=True)
    monkeypatch.setenv("REPOMAP_EVAL_AIDER", "kept")
    assert aider_row(quick=True) and aider_row(quick=False)
