"""A file's packed tags (core.repomap.store.PackedTags.of, core.repomap.keys.packed_keys) are
what the keys' definition gives, written here again from it: a name's key is 62 bits of its
BLAKE2b digest, bit 1 set for a compound of two words or more, bit 0 for a leading underscore; a
word's is the key of "\\0" + word. And each distinct name and word of a file is digested once,
a word's key remembered for the files after it (issue 22: the kernel's register headers name
the same words hundreds of times a file; main digested every occurrence)."""

from __future__ import annotations

import hashlib
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap import keys as repomap_keys
from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.tags import Definition, FileTags

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _key(name: str) -> int:
    words = [w for w in _WORDS.findall(name) if len(w) >= 3]
    raw = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    bits = int.from_bytes(raw, "little") & ~3
    return bits | (2 if len(words) >= 2 else 0) | (1 if name.startswith("_") else 0)


def _expected(tags: FileTags) -> tuple[list[tuple[int, int]], ...]:
    """(line, key) of the definitions, (key, count) of the references and of the words of the
    definitions' names (kept apart: the words' pass may give them later)."""
    defs = sorted({(d.line, _key(d.name)) for d in tags.definitions})
    refs: dict[int, int] = {}
    for name, count in tags.references.items():
        refs[_key(name)] = refs.get(_key(name), 0) + count
    words: dict[int, int] = {}
    for d in tags.definitions:
        for word in _WORDS.findall(d.name):
            if len(word) >= 3:
                key = _key("\0" + word.lower())
                words[key] = words.get(key, 0) + 1
    return defs, sorted(refs.items()), sorted(words.items())


def _packed(tags: FileTags) -> tuple[list[tuple[int, int]], ...]:
    p = PackedTags.of(tags)
    defs = list(zip(p.def_lines.tolist(), p.def_keys.tolist(), strict=True))
    refs = list(zip(p.ref_keys.tolist(), p.ref_counts.tolist(), strict=True))
    return defs, refs, list(zip(p.word_keys.tolist(), p.word_counts.tolist(), strict=True))


def _register_header(block: int, count: int) -> FileTags:
    """A kernel register header's definitions: the same few words in every name."""
    numbers = [f"{i // 10}_{i % 10}" for i in range(count)]  # (a number of 3 digits is a word)
    names = [f"mmGC_CNTL{block}_{n}__SHIFT" for n in numbers]
    names += [f"GC_CNTL_{n}__ENABLE_MASK" for n in numbers]
    defs = tuple(Definition(name, line, "") for line, name in enumerate(names))
    defs += (Definition("GC_CNTL_0_0__ENABLE_MASK", len(names), ""),)  # defined twice
    return FileTags(defs, {"u32": 3, "_dev_priv": 1, "GC_CNTL_0_1__ENABLE_MASK": 2})


def test_a_register_header_packs_as_the_keys_are_defined():
    tags = _register_header(0, 200)
    assert _packed(tags) == _expected(tags)
    p = PackedTags.of(tags)
    arrays = (p.def_keys, p.def_lines, p.ref_keys, p.ref_counts, p.word_keys, p.word_counts)
    assert [a.dtype.name for a in arrays] == [
        "uint64",
        "int32",
        "uint64",
        "int32",
        "uint64",
        "int32",
    ]


PIECE = st.sampled_from([*"aAzZ_09é", "HTTP", "Server", "reg", "\udcff", "__"])
NAME = st.lists(PIECE, max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(NAME, max_size=12), st.dictionaries(NAME, st.integers(1, 9), max_size=8))
def test_any_tags_pack_as_the_keys_are_defined(names: list[str], references: dict[str, int]):
    defs = tuple(Definition(n, i % 5, "") for i, n in enumerate(names) if n)
    tags = FileTags(defs, {n: c for n, c in references.items() if n})
    assert _packed(tags) == _expected(tags)


class _CountingDigests:
    """hashlib.blake2b for core.repomap.keys (which imports hashlib where it digests), counting
    the BLAKE2b digests it makes."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = hashlib.blake2b

    def blake2b(self, data: bytes, digest_size: int) -> object:
        self.calls += 1
        return self.real(data, digest_size=digest_size)


def test_each_distinct_name_and_word_is_digested_once(monkeypatch):
    """401 definitions of 400 names saying 4 distinct words 1,003 times, and 3 references (one
    of a name defined): 400 names, 2 references and the 4 words digested (main: 1,407); a
    second header saying the same words digests only its names and references (main: 1,407
    again)."""
    counting = _CountingDigests()
    monkeypatch.setattr(hashlib, "blake2b", counting.blake2b)
    monkeypatch.setattr(repomap_keys, "_word_keys", {}, raising=False)
    PackedTags.of(_register_header(0, 200))
    assert counting.calls == 400 + 2 + 4  # (GC_CNTL_0_1__ENABLE_MASK is a name)
    counting.calls = 0
    PackedTags.of(_register_header(1, 200))
    assert counting.calls == 400 + 2


ODD_PIECE = st.sampled_from(
    [*"aAbBzZ_09 \0\1\n-é", "ABc", "Ab", "AB", "abc", "ABC", "a1", "123", "\udcff"]
)
ODD_NAME = st.lists(ODD_PIECE, max_size=8).map("".join)


@settings(max_examples=1000, deadline=None)
@given(st.lists(ODD_NAME, max_size=12), st.dictionaries(ODD_NAME, st.integers(1, 9), max_size=8))
def test_names_of_every_kind_of_word_and_separator_pack_as_the_keys_are_defined(
    names: list[str], references: dict[str, int]
):
    """Words of 1 to 3 letters in every case next to each other, digits, names holding the
    separators a file's names could be joined by ("\\0", "\\n", " "), names without a word;
    and the names' words alone, as the words' pass makes them from a file's cached names."""
    defs = tuple(Definition(n, i % 5, "") for i, n in enumerate(names) if n)
    tags = FileTags(defs, {n: c for n, c in references.items() if n})
    assert _packed(tags) == _expected(tags)
    alone = repomap_keys.name_words([d.name for d in defs])
    assert sorted(alone.items()) == _expected(tags)[2]
    assert _packed_without_words(tags) == _expected(tags)[:2]


def _packed_without_words(tags: FileTags) -> tuple[list[tuple[int, int]], ...]:
    """`_packed`'s definitions and references as a first build's tag worker packs them (without
    the names' words: the words' pass makes them)."""
    defs = tags.definitions
    names, lines = [d.name for d in defs], [d.line for d in defs]
    p = PackedTags.of_parts(lines, names, tags.references, False)
    assert not p.words_made
    return (
        list(zip(p.def_lines.tolist(), p.def_keys.tolist(), strict=True)),
        list(zip(p.ref_keys.tolist(), p.ref_counts.tolist(), strict=True)),
    )


def test_without_the_names_words_no_string_of_their_words_is_made(monkeypatch):
    """A first build's keys need of a name's words only how many there are (the compound bit):
    counted from marks, not from a string of every word of every name (issue 22: 0.7 CPU s of
    the kernel's tag workers; 2f27079: `_spaced_words` once a file, fails)."""
    spelled = []
    spaced = repomap_keys._spaced_words

    def recorded(names: list[str]) -> list[str]:
        spelled.append(names)
        return spaced(names)

    monkeypatch.setattr(repomap_keys, "_spaced_words", recorded)
    tags = _register_header(0, 200)
    assert _packed_without_words(tags) == _expected(tags)[:2]
    assert spelled == []
    assert _packed(tags) == _expected(tags)  # with the names' words: spelled out, as before
    assert len(spelled) == 1


def test_a_files_names_are_not_split_into_words_one_by_one(monkeypatch):
    """A register header's 400 names and 3 references split into words together, and a word
    (one word already) is not split again when first keyed: `sub_words` is never called (main
    before 1894484: once for each of the 402 distinct names, then for each new word: 406;
    8148dde: for the 4 words keyed the first time)."""
    calls = []
    split = repomap_keys.sub_words

    def counted(name: str) -> list[str]:
        calls.append(name)
        return split(name)

    monkeypatch.setattr(repomap_keys, "sub_words", counted)
    monkeypatch.setattr(repomap_keys, "_word_keys", {}, raising=False)
    tags = _register_header(0, 200)
    assert _packed(tags) == _expected(tags)
    assert calls == []
