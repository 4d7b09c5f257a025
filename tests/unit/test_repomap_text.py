"""The tag workers' count of what a file says (core.repomap.text.count_words) is the repo map's
definition of it (core.repomap.tags.text_words), word for word and count for count, on any bytes:
identifiers in one case or mixed, digits, underscores, invalid UTF-8, and more words than kept.
After them (core.repomap.words.sections), its whole tokens are the BM25 baseline's
(bench.repomap_eval_baselines.BM25: a regular expression and a Counter written out here again), the
WHOLE_MAX most frequent."""

from __future__ import annotations

import re
import zlib
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap.keys import word_id
from tokend.core.repomap.tags import WORDS_MAX, text_words
from tokend.core.repomap.text import MARK, WHOLE_MAX, WHOLE_SEED, count_words
from tokend.core.repomap.words import sections

C_SOURCE = b"""/* SPDX: GPL-2.0 */
#define NETIF_F_HW_CSUM 0x1F2345
static int mlx5e_xmit(struct sk_buff *skb, struct net_device *dev_priv2x)
{
	u32 reg32 = readl(priv->HTTPServer_base + 0x10);  // parseHTTPConfig_v2 __be16
	return fooABCbar(skb, 9abc, a_1_22_333, 12_345, _2345, \xff\xfe\xc3\xa9tat_xyz123);
}
"""


def _baseline_tokens(text: str) -> Counter[str]:
    """The BM25 baseline's tokens of a text (bench.repomap_eval_data's rule, written out)."""
    return Counter(w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text))


def _same(source: bytes) -> None:
    said = count_words(source)
    words, tokens = sections(said)
    assert dict(words) == text_words(source.decode("utf-8", "replace"))
    assert count_words(source, whole=False) == text_words(source.decode("utf-8", "replace"))
    assert said[MARK] == len(tokens)
    expected = _baseline_tokens(source.decode("utf-8", "replace"))
    if len(expected) <= WHOLE_MAX:  # (ids colliding with a word's of the file: none here)
        ids = {zlib.crc32(t.encode(), WHOLE_SEED): n for t, n in expected.items()}
        assert dict(tokens) == {k: n for k, n in ids.items() if k not in words}


def test_c_code_counts_as_the_map_defines_its_words():
    _same(C_SOURCE)
    said = count_words(C_SOURCE)
    assert said[word_id("csum")] == 1
    assert said[word_id("skb")] == 2
    assert said[word_id("netif_f_hw_csum")] == 1  # a compound: itself too
    assert said[word_id("parsehttpconfig_v2")] == 1
    assert word_id("reg32") not in said  # one word (reg) and digits: not a compound
    _, tokens = sections(said)
    assert tokens[zlib.crc32(b"reg32", WHOLE_SEED)] == 1  # whole tokens: as written, lowered
    assert tokens[zlib.crc32(b"skb", WHOLE_SEED)] == 2
    assert zlib.crc32(b"csum", WHOLE_SEED) not in tokens  # a part is no token


def test_more_tokens_than_kept_keeps_the_most_frequent():
    many = b" ".join(b"tok%04d" % i for i in range(WHOLE_MAX * 2)) + b" often" * 5
    _, tokens = sections(count_words(many))
    assert len(tokens) == WHOLE_MAX
    assert tokens[zlib.crc32(b"often", WHOLE_SEED)] == 5


def test_more_words_than_kept_keeps_the_same_ones():
    rare = b" ".join(b"w%03d_%s" % (i, b"abc"[i % 3 :] * 3) for i in range(WORDS_MAX * 3))
    source = C_SOURCE * 3 + rare + b" Tie tie TIE tIe"
    assert len(sections(count_words(source))[0]) == WORDS_MAX
    _same(source)


ALPHABET = st.sampled_from([*"aAbBzZ_09 \n.(é", "xx", "HTTP", "Server", "abc", "_v2", "\udcff"])


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=80))
def test_any_text_counts_the_same(pieces: list[str]):
    _same("".join(pieces).encode("utf-8", "surrogateescape"))


class _CountingSplits:
    """core.repomap.keys's regular expression (on bytes), counting the identifiers it splits."""

    def __init__(self, pattern: object) -> None:
        self.pattern, self.calls = pattern, 0

    def findall(self, text: bytes) -> list[bytes]:
        self.calls += 1
        return self.pattern.findall(text)  # type: ignore[attr-defined, no-any-return]


def test_the_parser_splits_only_mixed_case_identifiers_by_regex(monkeypatch):
    """A C file's words: of its 28 distinct identifiers, only the 14 mixing cases or letters and
    digits (reg32, parseHTTPConfig_v2, x10, ...) go through the regular expression (main: 28)."""
    from tokend.adapters.tags import TagParser
    from tokend.core.repomap import text as repomap_text

    counting = _CountingSplits(repomap_text._SUB_WORD)
    monkeypatch.setattr(repomap_text, "_SUB_WORD", counting)
    tags = TagParser().tags("c", C_SOURCE)
    assert counting.calls == 14
    assert dict(sections(tags.words)[0]) == text_words(C_SOURCE.decode("utf-8", "replace"))
