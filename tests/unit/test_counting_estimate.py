"""Tier-1 estimate: properties of the arithmetic and classification of real files."""

from __future__ import annotations

import base64
import io
import logging
import random
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.counting.estimate import (
    DEFAULT_CHARS_PER_TOKEN,
    EstimateCounter,
    classify,
    estimate_tokens,
    text_features,
)
from tokend.core.counting.media_tokens import IMAGE_TOKENS, image_tokens, pdf_page_tokens
from tokend.core.types import ContentClass

SERVER = Path(__file__).resolve().parents[2] / "server" / "tokend"
PURELIB = Path(sysconfig.get_paths()["purelib"])

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=400)
classes = st.sampled_from(list(ContentClass))


@given(texts)
def test_estimate_is_zero_only_for_empty_text(text: str) -> None:
    tokens = estimate_tokens(text)
    assert tokens >= 0
    assert (tokens == 0) == (text == "")


@given(texts, texts, classes)
def test_concatenation_costs_about_the_sum_of_the_parts(
    a: str, b: str, klass: ContentClass
) -> None:
    # Joining can merge or split one run at the seam, and each estimate rounds: a few tokens at most.
    joined = estimate_tokens(a + b, klass)
    assert abs(joined - estimate_tokens(a, klass) - estimate_tokens(b, klass)) <= 4
    assert joined >= max(estimate_tokens(a, klass), estimate_tokens(b, klass)) - 4


@settings(max_examples=50)
@given(st.text(min_size=20, max_size=200), st.integers(min_value=2, max_value=20), classes)
def test_estimate_grows_linearly_with_repetition(
    text: str, times: int, klass: ContentClass
) -> None:
    once = estimate_tokens(text, klass)
    many = estimate_tokens(text * times, klass)
    assert abs(many - once * times) <= 0.05 * once * times + 2 * times


@given(texts)
def test_features_are_counts_never_negative(text: str) -> None:
    assert all(f >= 0 for f in text_features(text))


def test_learned_ratios_scale_the_estimate_of_their_class_only() -> None:
    code = (SERVER / "core" / "counting" / "estimate.py").read_text()
    base = estimate_tokens(code, ContentClass.CODE)
    half = {ContentClass.CODE: DEFAULT_CHARS_PER_TOKEN[ContentClass.CODE] / 2}
    assert estimate_tokens(code, ContentClass.CODE, half) == pytest.approx(2 * base, rel=0.01)
    assert estimate_tokens(code, ContentClass.PROSE, half) == estimate_tokens(
        code, ContentClass.PROSE
    )
    assert estimate_tokens(code, ContentClass.CODE, {ContentClass.CODE: 0.0}) == base  # ignored


def test_estimate_counter_uses_its_ratios() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 40
    plain = EstimateCounter()
    assert (plain.name, plain.exact) == ("estimate", False)
    denser = EstimateCounter({ContentClass.PROSE: 2.0})
    assert denser.count(text) > plain.count(text)
    assert plain.count_as(text, ContentClass.PROSE) == plain.count(text)


# --------------------------------------------------------------------------- classification


def test_classifies_this_projects_python_as_code() -> None:
    files = sorted(SERVER.rglob("*.py"))
    sources = [p.read_text() for p in files if p.stat().st_size > 1500]
    assert sources
    labels = [classify(s) for s in sources]
    assert labels.count(ContentClass.CODE) >= 0.9 * len(labels)


def installed(pattern: str, smallest: int, largest: int) -> list[Path]:
    """Files of the virtualenv `make bootstrap` builds from the pinned lock (at least 3: fewer
    FAILS, never skips, since the classification would then go unchecked)."""
    found = sorted(p for p in PURELIB.rglob(pattern) if smallest < p.stat().st_size < largest)
    if len(found) < 3:
        pytest.fail(
            f"only {len(found)} {pattern} files of {smallest:,}..{largest:,} bytes are installed "
            f"under {PURELIB}; the pinned lock brings dozens (run `make bootstrap`)"
        )
    return found[:30]


def test_classifies_installed_markdown_as_prose() -> None:
    files = installed("*.md", 2000, 200_000)
    labels = [classify(p.read_text(encoding="utf-8", errors="replace")) for p in files]
    assert labels.count(ContentClass.PROSE) >= 0.7 * len(labels)


def test_classifies_installed_json_as_json() -> None:
    files = installed("*.json", 500, 2_000_000)
    labels = [classify(p.read_text(encoding="utf-8", errors="replace")) for p in files]
    assert labels.count(ContentClass.JSON) >= 0.8 * len(labels)


def cjk_text(codec: str, lead: range, trail: range, ascii_words: int, seed: int) -> str:
    """Text in the shape of the interpreter's test/cjkencodings samples (which a distribution's
    Python may leave out): sentences of characters the `codec` (which CPython always ships)
    decodes from the `lead` x `trail` double-byte table, with `ascii_words` ASCII names and
    figures in each line. Those samples are 7% to 56% ASCII; 1 word makes ~17%, 6 ~50%."""
    chars = []
    for hi in lead:
        for lo in trail:
            try:
                chars.append(bytes((hi, lo)).decode(codec))
            except UnicodeDecodeError:
                continue
    rng = random.Random(seed)
    words = ["Python", "API", "3.11", "tokend", "UTF-8", "(2024)", "JSON"]
    lines = []
    for _ in range(40):
        clauses = ["".join(rng.choices(chars, k=rng.randint(6, 18))) for _ in range(3)]
        latin = " ".join(rng.choices(words, k=ascii_words))
        lines.append(f"{clauses[0]} {latin} {clauses[1]}，{clauses[2]}。")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("codec", "lead", "trail"),
    [
        ("gb2312", range(0xB0, 0xD8), range(0xA1, 0xFF)),  # Chinese: the level-1 hanzi
        ("shift_jis", range(0x88, 0x99), range(0x40, 0xFD)),  # Japanese: JIS level-1 kanji
        ("shift_jis", range(0x82, 0x83), range(0x9F, 0xF2)),  # Japanese: hiragana
        ("euc_kr", range(0xB0, 0xC9), range(0xA1, 0xFF)),  # Korean: the KS X 1001 hangul
    ],
    ids=["hanzi", "kanji", "hiragana", "hangul"],
)
@pytest.mark.parametrize("ascii_words", [1, 6])
def test_classifies_cjk_text_as_cjk(
    codec: str, lead: range, trail: range, ascii_words: int
) -> None:
    text = cjk_text(codec, lead, trail, ascii_words, seed=lead.start)
    ascii_share = len(text.encode("ascii", "ignore")) / len(text)
    assert 0.07 <= ascii_share <= 0.56  # as mixed as the interpreter's samples, not pure CJK
    assert classify(text) == ContentClass.CJK


def test_classifies_logging_output_as_log() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("tokend.test.classify")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        for i in range(40):
            logger.info("request %d served in %d ms for session=%s", i, 3 * i, f"s{i:04d}")
            if i % 7 == 0:
                logger.warning("slow store write: %d ms", 100 + i)
    finally:
        logger.removeHandler(handler)
    assert classify(stream.getvalue()) == ContentClass.LOG


def test_classifies_base64_of_a_real_binary_as_blob() -> None:
    data = Path(sys.executable).resolve().read_bytes()[4096 : 4096 + 6000]
    encoded = base64.b64encode(data).decode()
    assert classify(encoded) == ContentClass.BLOB
    assert classify("\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))) == (
        ContentClass.BLOB
    )
    assert classify(data.hex()) == ContentClass.BLOB


# --------------------------------------------------------------------------- images


def test_image_figures_follow_the_providers_rules() -> None:
    assert IMAGE_TOKENS["anthropic"] == round(1092 * 1092 / 750)
    assert IMAGE_TOKENS["openai"] == 85 + 170 * 4
    assert image_tokens("openai") == 765
    assert image_tokens("azure") == 765
    assert image_tokens(None) == max(IMAGE_TOKENS.values())  # unknown: never under-counted
    assert image_tokens("some-new-provider") == max(IMAGE_TOKENS.values())
    assert pdf_page_tokens("anthropic") > image_tokens("anthropic")
