"""A long text counted in pieces gives the count of the whole, for Claude's families and for
o200k_base, on long real texts: code, prose, JSON, logs, CJK and one long line.

Oracles: ctok's count of the whole text (one user message, less its family's frame) and
tiktoken's count of the whole text. The pieces are forced small (a few KB) so that every text is
cut many times; the service's own path (ModelCounter.count_long, pieces of 256 Ki characters) is
checked on a text over 262,144 characters, which main counted off by a token or two for Claude
(its pieces were counted as messages of their own: the frame takes in a last line break, and
v4.8's none of a first space).
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import ctok
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tokend.adapters.claude_tokens import ClaudeCounter
from tokend.adapters.tokenizers import CachedCounter, ExactTokenizers, load_encoding
from tokend.core.counting.calibration import Calibrator
from tokend.core.counting.estimate import DEFAULT_CHARS_PER_TOKEN
from tokend.core.models.catalog import ModelInfo
from tokend.core.text_chunks import CHUNK_CHARS, count_chunks
from tokend.service.counting.counter import ModelCounter

VERSION = {"claude-v3": ("3.0", 7), "claude-v4.7": ("4.7", 11), "claude-v4.8": ("4.8", 6)}
SITE = Path(sysconfig.get_paths()["purelib"])
LONG = 120_000  # characters a text is taken to (ctok's own count is slow: ~0.2 MB/s)


def _upto(parts: list[str], chars: int = LONG) -> str:
    """The parts joined (each once, in order) until there are `chars` characters."""
    out: list[str] = []
    have = 0
    for part in parts:
        out.append(part)
        have += len(part)
        if have >= chars:
            break
    assert have >= chars, f"only {have} characters"
    return "".join(out)[:chars]


def _files(pattern: str, root: Path) -> list[str]:
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob(pattern))]


def _log() -> str:
    """pip's own --log output (timestamped lines) of read-only commands."""
    texts = []
    for i, args in enumerate((["list", "-v"], ["show", "-f", "pip", "ctok", "sqlalchemy"])):
        log = ROOT / "tests" / f".pip-{i}.log"
        try:
            command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--log"]
            subprocess.run([*command, str(log), *args], capture_output=True, timeout=120)
            texts.append(log.read_text(encoding="utf-8"))
        finally:
            log.unlink(missing_ok=True)
    return _upto(texts * 40, 60_000)


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    cjk_dir = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    cjk = [t for t in _files("*-utf8.txt", cjk_dir) if not t.isascii()]
    records = []
    for path in sorted(SITE.glob("**/*.json"))[:300]:
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError):
            continue
    return {
        "code": _upto(_files("**/*.py", ROOT / "server" / "tokend")),
        "prose": _upto(_files("**/*.md", SITE)),
        "json": _upto([json.dumps(r, indent=2) + "\n" for r in records] * 20),
        "log": _log(),
        "cjk": _upto(cjk * 40, 40_000),
        "one long line": _upto([json.dumps(r) for r in records] * 20, 80_000),
    }


def _ctok(text: str, family: str) -> int:
    version, frame = VERSION[family]
    return int(ctok.token_count(text, version)) - frame


@pytest.mark.parametrize("family", sorted(VERSION))
def test_claudes_pieces_add_up_to_ctoks_count_of_the_whole(
    family: str, texts: dict[str, str]
) -> None:
    counter = ClaudeCounter(family)
    for kind, text in texts.items():
        parts = list(counter.count_pieces(text, 2_000))
        if kind not in ("cjk", "one long line"):  # neither has many line breaks to cut at
            assert len(parts) >= 10, kind
        assert sum(parts) == _ctok(text, family), kind


@pytest.mark.parametrize("size", [1_000, CHUNK_CHARS])
def test_o200ks_pieces_add_up_to_tiktokens_count_of_the_whole(
    size: int, texts: dict[str, str]
) -> None:
    encoding = load_encoding("o200k_base")
    for kind, text in texts.items():
        pieces = list(count_chunks(text, size))
        assert "".join(pieces) == text
        whole = len(encoding.encode_ordinary(text))
        assert sum(len(encoding.encode_ordinary(p)) for p in pieces) == whole, kind


def _model(name: str, tokenizer: str) -> ModelInfo:
    return ModelInfo(name, "anthropic", 1_000_000, 64_000, tokenizer=tokenizer)


@pytest.mark.parametrize("family", sorted(VERSION))
def test_a_text_over_one_piece_counts_as_ctoks_whole(family: str, texts: dict[str, str]) -> None:
    """Found: a text over one piece was counted piece by piece, each as a message of its own:
    158,289 against ctok's 158,290 on 400 KB (v3), and 240,534 against 240,532 on this text
    (v4.8, whose frame takes in no leading space: main cut before spaces too)."""
    text = texts["code"] * 3 + texts["prose"] + texts["json"]
    assert len(text) > CHUNK_CHARS
    exact = _ctok(text, family)
    model = _model("claude-test", family)
    counter = ModelCounter(
        model, None, Calibrator(DEFAULT_CHARS_PER_TOKEN), tokenizers=ExactTokenizers()
    )
    assert counter.count_long(text) == (exact, True)
    again = CachedCounter(ClaudeCounter(family))
    assert sum(again.count_pieces(text)) == sum(again.count_pieces(text)) == exact


_PIECES = ["\n", "\n\n", " ", "  ", "a", "Word", "ABCD", "x1", "é", "中", "'s", ".", "\t", "\r\n"]


@pytest.mark.parametrize("family", sorted(VERSION))
@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=60),
    size=st.integers(min_value=1, max_value=12),
)
def test_any_text_cut_small_adds_up_to_ctoks_count(
    family: str, parts: list[str], size: int
) -> None:
    """Line breaks at the head, at the end, in runs; case, CJK, contractions: cut every few
    characters, the parts add up to ctok's count."""
    text = "".join(parts)
    counter = ClaudeCounter(family)
    assert sum(counter.count_pieces(text, size)) == _ctok(text, family), repr(text)
