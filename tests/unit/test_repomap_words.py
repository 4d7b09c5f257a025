"""What each file says, kept for a task's text (core.repomap.words): each file's words as their
ids (CRC-32, no vocabulary kept) and counts in flat arrays, not as a dictionary of strings per file;
the graph's reference table does not grow with them; an edit that changes only what a file
says moves the text's rank without deriving the graph's rows again (a graph changed in place
reads a text as one built at once: tests/workspace/test_repomap_graph_updates)."""

from __future__ import annotations

import numpy as np

from tokend.core.repomap import words as repomap_words
from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.keys import word_id, word_ids
from tokend.core.repomap.tags import WORDS_MAX, Definition, FileTags, text_words

VOCABULARY = [f"w{i:04d}x" for i in range(3000)]


def _file(i: int) -> FileTags:
    rng = np.random.default_rng(i)
    chosen = rng.choice(len(VOCABULARY), size=WORDS_MAX, replace=False)
    words = word_ids({VOCABULARY[j]: int(rng.integers(1, 40)) for j in sorted(chosen.tolist())})
    return FileTags((Definition(f"f{i}", 0, ""),), {"helper": 2}, words=words)


def test_words_take_five_bytes_an_entry_and_no_vocabulary():
    graph = RepoGraph()
    files = {f"src/m{i:04d}.py": _file(i) for i in range(1000)}
    bare = RepoGraph()
    bare.set_files({p: FileTags(t.definitions, t.references) for p, t in files.items()})
    for start in range(0, 1000, 250):  # a chunk at a time, as the first build hands them
        graph.set_files(dict(list(files.items())[start : start + 250]))
    entries = 1000 * WORDS_MAX
    words = graph.words
    assert len(words.ids) == entries
    assert words.nbytes <= 5 * entries + 8 * 1001
    assert len(graph.table.r_key) == len(bare.table.r_key)  # the names' table: as without words


def test_counts_and_rows_read_back_as_given():
    graph = RepoGraph()
    graph.set_files({"b.py": FileTags(words=word_ids({"alpha": 3, "beta": 70000})),
                     "a.py": FileTags(words=word_ids({"beta": 1}))})  # fmt: skip
    ids = np.array(sorted(word_id(w) for w in ["alpha", "beta", "gamma"]))
    alpha, beta = word_id("alpha"), word_id("beta")
    rows, at, tf = (np.concatenate(c) for c in zip(*graph.words.hits(ids), strict=True))
    hits = zip(rows.tolist(), ids[at].tolist(), tf.tolist(), strict=True)
    assert sorted(hits) == sorted(  # nobody says gamma
        [(0, beta, 1.0), (1, alpha, 3.0), (1, beta, 255.0)]  # a.py is row 0 (path order)
    )  # a count past 255 is kept as 255


def test_a_comment_that_says_the_task_moves_its_file_without_deriving_the_graph():
    """Only what net/pace.py says changes (a comment): the text's rank follows it, the
    graph's names and edges are kept (no new graph version, no rows derived again)."""
    graph = RepoGraph()
    code = "def pace(sender):\n    return sender\n"
    files = {f"net/m{i}.py": FileTags((Definition(f"m{i}", 0, ""),), {"hub": 1},
                                      words=text_words(f"def m{i}(x):\n    return hub(x)\n"))
             for i in range(8)}  # fmt: skip
    files["net/hub.py"] = FileTags((Definition("hub", 0, ""),), {}, words=text_words("def hub"))
    files["net/pace.py"] = FileTags((Definition("pace", 0, ""),), {}, words=text_words(code))
    graph.set_files(files)
    task = Focus(text="uploads ignore the bandwidth ceiling")
    assert graph.rank_files(task)[0][0] == "net/hub.py"  # nothing says it: the graph's rank
    edges, graph_version, version = graph.edges(), graph.graph_version, graph.version
    commented = "# keeps uploads under the bandwidth ceiling\n" + code
    changed = FileTags(files["net/pace.py"].definitions, {}, words=text_words(commented))
    assert graph.set_files({"net/pace.py": changed})
    assert graph.version == version + 1 and graph.graph_version == graph_version
    assert graph.edges() is edges
    assert graph.rank_files(task)[0][0] == "net/pace.py"
    assert not graph.set_files({"net/pace.py": changed})  # the same again: no change


def test_words_read_a_few_rows_at_a_time_rank_as_read_at_once(monkeypatch):
    """What files say is read a block of whole rows at a time (bounded memory); any block
    size gives the same scores, for a text and for what a focus file says."""
    graph = RepoGraph()
    graph.set_files({f"src/m{i:04d}.py": _file(i) for i in range(60)})
    focuses = [Focus(text="w0001x w0002x w2999x"), Focus(frozenset({"src/m0003.py"}))]
    whole = [graph.rank_files(f) for f in focuses]
    monkeypatch.setattr(repomap_words, "SIEVE_BLOCK", 300)  # a file is 384 words: a row a block
    assert [graph.rank_files(f) for f in focuses] == whole
    assert len(list(graph.words.hits(graph.words.row_ids(3)))) == 60
