"""The tag workers' count of what a file says (core.repomap.text.count_words) is the repo map's
definition of it (core.repomap.tags.text_words), word for word and count for count, on any bytes:
identifiers in one case or mixed, digits, underscores, invalid UTF-8, and more words than kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap.keys import word_id
from tokend.core.repomap.tags import WORDS_MAX, text_words
from tokend.core.repomap.text import count_words

C_SOURCE = b"""/* SPDX: GPL-2.0 */
#define NETIF_F_HW_CSUM 0x1F2345
static int mlx5e_xmit(struct sk_buff *skb, struct net_device *dev_priv2x)
{
	u32 reg32 = readl(priv->HTTPServer_base + 0x10);  // parseHTTPConfig_v2 __be16
	return fooABCbar(skb, 9abc, a_1_22_333, 12_345, _2345, \xff\xfe\xc3\xa9tat_xyz123);
}
"""


def _same(source: bytes) -> None:
    assert count_words(source) == text_words(source.decode("utf-8", "replace"))


def test_c_code_counts_as_the_map_defines_its_words():
    _same(C_SOURCE)
    said = count_words(C_SOURCE)
    assert said[word_id("csum")] == 1
    assert said[word_id("skb")] == 2
    assert said[word_id("netif_f_hw_csum")] == 1  # a compound: itself too
    assert said[word_id("parsehttpconfig_v2")] == 1
    assert word_id("reg32") not in said  # one word (reg) and digits: not a compound


def test_more_words_than_kept_keeps_the_same_ones():
    rare = b" ".join(b"w%03d_%s" % (i, b"abc"[i % 3 :] * 3) for i in range(WORDS_MAX * 3))
    source = C_SOURCE * 3 + rare + b" Tie tie TIE tIe"
    assert len(count_words(source)) == WORDS_MAX
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
    assert tags.words == text_words(C_SOURCE.decode("utf-8", "replace"))
