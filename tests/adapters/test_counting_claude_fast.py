"""tokend's own Claude counting path gives ctok's count, exactly.

Oracle: ctok itself (`ctok.engine.tile`, the count of a text as one user message less the frame,
and `ctok.normalize.stream_norm`, the marked stream it tiles) on the project's own sources, the
shared Claude Code sessions' tool results and texts, non-ASCII files of site-packages, and random
strings built from the characters ctok's rules single out (spaces, line breaks, case, apostrophes,
contractions, digits, NUL and control characters, curly quotes, CJK, non-ASCII digits).
"""

from __future__ import annotations

import json
import random
import sysconfig
from pathlib import Path

import pytest
from ctok.engine import tile
from ctok.main import _family, _model
from ctok.normalize import nfc, stream_norm

from tests.conftest import ROOT, sessions_dir_or_skip
from tokend.adapters.claude_fast import FastClaude, ascii_case

VERSIONS = {"claude-v3": "3.0", "claude-v4.7": "4.7", "claude-v4.8": "4.8"}
ALPHABET = [" ", "  ", "\n", "\n\n", "\n ", "\t", "a", "A", "X", "ll", "s", "'", "1", ".", "!",
            "é", "中", "\x00", "\x01", "\xa0", "\u2019", "\u0663", "Ab", "ABCD", "\r\n"]  # fmt: skip


def _fresh(family: str) -> tuple[FastClaude, object]:
    model = _model(_family(VERSIONS[family]))
    return FastClaude(model), model


def _texts_of_sessions() -> list[str]:
    """Every string of at least 40 characters in the shared sessions' records (tool results,
    file contents, prompts, replies)."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str) and len(value) >= 40:
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted(sessions_dir_or_skip().glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                walk(json.loads(line))
    return found


def _corpus() -> list[str]:
    own = [
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "server" / "tokend").rglob("*.py"))
    ]
    own += [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("*.md"))]
    site = Path(sysconfig.get_paths()["purelib"])
    foreign = [
        text
        for p in sorted(site.glob("**/*.md"))[:400]
        if not (text := p.read_text(encoding="utf-8", errors="replace")).isascii()
    ]
    sessions = _texts_of_sessions()
    random.Random(7).shuffle(own)
    random.Random(8).shuffle(sessions)
    return own[:60] + foreign[:25] + sessions[:400]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    texts = _corpus()
    assert sum(map(len, texts)) > 400_000
    return texts


@pytest.mark.parametrize("family", sorted(VERSIONS))
def test_real_texts_count_and_stream_as_ctok(family: str, corpus: list[str]) -> None:
    fast, model = _fresh(family)
    wrong = [t[:60] for t in corpus if fast.count(t) != tile(t, model)[0]]
    assert wrong == []
    fold = model.fold_quotes  # type: ignore[attr-defined]
    for text in corpus[:80]:
        norm = nfc(text, fold_quotes=fold)
        head = text.startswith(" ")
        assert fast.stream(norm, head_space=head) == stream_norm(norm, model, raw_head_space=head)


@pytest.mark.parametrize("family", sorted(VERSIONS))
def test_a_whole_corpus_at_once_counts_as_ctok(family: str, corpus: list[str]) -> None:
    fast, model = _fresh(family)
    blob = "\n".join(corpus)[:300_000]
    assert fast.count(blob) == tile(blob, model)[0]


@pytest.mark.parametrize("family", sorted(VERSIONS))
def test_random_texts_of_the_characters_ctok_singles_out(family: str) -> None:
    fast, model = _fresh(family)
    rng = random.Random(20)
    wrong = []
    for _ in range(3000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 16)))
        norm = nfc(text, fold_quotes=model.fold_quotes)  # type: ignore[attr-defined]
        head = text.startswith(" ")
        if fast.count(text) != tile(text, model)[0] or fast.stream(
            norm, head_space=head
        ) != stream_norm(norm, model, raw_head_space=head):
            wrong.append(text)
    assert wrong == []


@pytest.mark.parametrize("family", sorted(VERSIONS))
def test_what_is_remembered_does_not_leak_between_heads(family: str) -> None:
    # " a" and "\x00a" normalize alike, but only the first starts with the space the frame absorbs.
    fast, model = _fresh(family)
    for text in ["\x00a", " a", "\x00a", " A\n b", "x\n b", " A\n b", "a\n\n\n'll", "'ll"]:
        assert fast.count(text) == tile(text, model)[0], text
    # Long lines are remembered by a hash of the line (and of whether it heads the message).
    long = " Line of a minified file: " + "x=1;y='It''s';" * 80
    for text in [long, "x\n" + long, long + "\n" + long, "\x00" + long[1:], long]:
        assert fast.count(text) == tile(text, model)[0], text[:40]


def test_ascii_case_marks_as_ctok() -> None:
    from ctok.normalize import mark_case

    words = ["a", "A", "ab", "Ab", "aB", "AB", "ABC", "ABCD", "AbCd", "Abcd", "ABCDe", "xYZW"]
    for caps in (4, None):
        assert [ascii_case(w, caps) for w in words] == [mark_case(w, caps) for w in words]
