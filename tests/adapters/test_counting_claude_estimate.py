"""The cold estimate of a Claude model without an exact count, in its family's tokens.

Oracle: ctok's count of each text (`ctok.token_count` less the family's frame). Texts: the Markdown
long descriptions of distributions the lock pins (fixed by the lock, unlike this repository's own
Markdown, which every change to the docs would move), this repository's core Python files, base64 of
compiled extension modules installed here, and the interpreter's CJK test texts (what
bench/estimator.py draws from, another draw than the fit).
"""

from __future__ import annotations

import base64
import statistics
import sysconfig
from importlib.metadata import metadata
from pathlib import Path

import ctok
import pytest

from tests.conftest import ROOT
from tokend.core.counting.estimate_families import family_estimate_tokens

PINNED_MARKDOWN = (
    "annotated-types",
    "attrs",
    "build",
    "cattrs",
    "charset-normalizer",
    "fasteners",
    "httpcore",
    "httpx",
    "idna",
    "jiter",
    "numpy",
    "platformdirs",
    "pydantic",
)
"""Distributions in requirements.lock whose long description is Markdown."""
VERSION = {"claude-v3": ("3.0", 7), "claude-v4.7": ("4.7", 11), "claude-v4.8": ("4.8", 6)}


def _texts() -> dict[str, list[str]]:
    markdown = [str(metadata(name).get_payload()) for name in PINNED_MARKDOWN]
    python = [
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "server/tokend/core").rglob("*.py"))
    ]
    site = Path(sysconfig.get_paths()["platlib"])
    binaries = sorted(p for p in site.rglob("*.so") if p.stat().st_size > 60_000)[:12]
    blobs = [base64.b64encode(p.read_bytes()[20_000:50_000]).decode() for p in binaries]
    cjk_dir = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    cjk = [
        p.read_text(encoding="utf-8")
        for p in sorted(cjk_dir.glob("*-utf8.txt"))
        if not p.name.endswith("_utf8.txt")
    ]
    return {
        "markdown": [t for t in markdown if len(t) > 1_000][:12],
        "python": [t for t in python if len(t) > 2_000][:25],
        "base64": blobs,
        "cjk": cjk,
    }


@pytest.fixture(scope="module")
def texts() -> dict[str, list[str]]:
    found = _texts()
    assert len(found["markdown"]) >= 4 and len(found["python"]) >= 15 and len(found["base64"]) >= 6
    assert len(found["cjk"]) >= 4
    return found


def _error(family: str, sources: list[str]) -> float:
    version, frame = VERSION[family]
    errors = []
    for text in sources:
        truth = ctok.token_count(text, version) - frame
        errors.append(abs(family_estimate_tokens(text, family) - truth) / truth * 100)
    return statistics.mean(errors)


# Measured on these texts: the family's own weights v3 markdown 4.2% (v4.7 3.9; the pinned
# descriptions; on this repository's Markdown at the merge 6.7), python 4.0, base64 8.1, CJK
# 12.2; v4.7 4.9, 3.2, 2.2, 11.8. Main's o200k-shaped estimate scaled per class: v3 4.6, 3.1, 7.3,
# 21.8; v4.7 4.0, 4.0, 49.8, 21.1.
LIMITS = {"markdown": 6.0, "python": 5.0, "base64": 9.0, "cjk": 14.0}


@pytest.mark.parametrize("family", sorted(VERSION))
@pytest.mark.parametrize("source", sorted(LIMITS))
def test_the_cold_estimate_is_near_claudes_count(
    family: str, source: str, texts: dict[str, list[str]]
) -> None:
    assert _error(family, texts[source]) <= LIMITS[source]


HELD_OUT = Path(__file__).parent / "data" / "claude_held_out_python.txt"


def _bench_python() -> list[str]:
    """The Python files bench/claude.py measured the estimate on when the fit (bench/claude_fit.py)
    left them out: its draw of the installed site-packages with the lock's packages alone, pinned
    by path, so a package installed beside them (a pytest plugin) does not change the sample."""
    roots = [Path(p) for p in sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib")})]
    names = [n for n in HELD_OUT.read_text(encoding="utf-8").splitlines() if not n.startswith("#")]
    found = [next((r / n for r in roots if (r / n).is_file()), None) for n in names]
    missing = [n for n, p in zip(names, found, strict=True) if p is None]
    assert not missing, f"held-out files gone (the lock changed?): {missing[:3]}"
    return [p.read_text(encoding="utf-8") for p in found if p is not None]


@pytest.mark.parametrize("family", sorted(VERSION))
def test_the_cold_estimate_of_held_out_python_is_within_five_percent(family: str) -> None:
    """Found: bench claude's Python files were 5.5% off for v4.7 and v4.8 (4.9 for v3), beside
    3.5-4.0 for JavaScript: Python's capitals after a capital (GOOGLESQL_BUILTINS: +33%) were
    priced as capitalised words. Now 4.4 for each family, on files the fit never saw."""
    texts = _bench_python()
    assert len(texts) == 40
    truths = [(t, ctok.token_count(t, VERSION[family][0]) - VERSION[family][1]) for t in texts]
    assert _error(family, [t for t, n in truths if n >= 20]) <= 5.0
