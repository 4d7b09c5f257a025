"""What a file says, as the repo map's BM25 reads it (core.repomap.tags.spoken, by id:
text_words): the words of every identifier-like token of its text, comments and strings
included, and each compound token whole, counted, the most frequent kept; carried in the cached
tags (JSON) and kept as the graph's words of that file."""

from __future__ import annotations

import numpy as np

from tokend.core.repomap.graph import RepoGraph
from tokend.core.repomap.keys import name_key, word_id, word_ids, word_key
from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.tags import WORDS_MAX, Definition, FileTags, spoken, text_words


def test_words_of_code_comments_and_strings_with_counts():
    text = '# Parse the HTTPConfig\nparse_config = load("config.toml")  # go\n'
    assert spoken(text) == {
        "config": 3, "http": 1, "load": 1, "parse": 2, "the": 1, "toml": 1,
        "httpconfig": 1, "parse_config": 1,
    }  # fmt: skip
    assert text_words(text) == {word_id(w): n for w, n in spoken(text).items()}


def test_the_most_frequent_words_are_kept_ties_the_first_said():
    rare = [f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(WORDS_MAX + 50)]
    kept = spoken(" ".join(reversed(rare)) + " common common common")
    assert len(kept) == WORDS_MAX
    assert kept["common"] == 3
    assert set(kept) == {"common", *rare[::-1][: WORDS_MAX - 1]}  # the first said


def test_words_survive_the_cache_and_are_kept_apart_from_the_names():
    tags = FileTags(
        (Definition("pump", 3, "def pump(sock):"),),
        {"recv_into": 2},
        words=word_ids({"bandwidth": 4, "pump": 1}),
    )
    assert FileTags.from_json(tags.to_json()) == tags
    packed = PackedTags.of(tags)
    assert set(packed.ref_keys.tolist()) == {name_key("recv_into")}
    assert set(packed.word_keys.tolist()) == {word_key("pump")}
    graph = RepoGraph()
    graph.set_files({"net/pump.py": tags})
    ids = np.array(sorted(word_id(w) for w in ["bandwidth", "pump", "recv"]))
    rows, at, counts = (np.concatenate(c) for c in zip(*graph.words.hits(ids), strict=True))
    found = {int(ids[a]): c for a, c in zip(at.tolist(), counts.tolist(), strict=True)}
    # "recv" is not said: the text's words stand for the references'
    assert found == {word_id("bandwidth"): 4.0, word_id("pump"): 1.0}
