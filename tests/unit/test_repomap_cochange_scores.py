"""core.repomap.cochange: each file's share of the commits it changed in with a focus file,
worked out by hand from a few commits (the oracle is arithmetic on the commits, not the code)."""

from __future__ import annotations

import numpy as np

from tokend.core.repomap.cochange import MAX_FILES, SWEEP_PATHS, History, cochange

PATHS = ["a.py", "b.py", "c.py", "d.py", *(f"s{i:02}.py" for i in range(MAX_FILES))]
ROW = {p: i for i, p in enumerate(PATHS)}


def scores(commits: list[list[str]], focus: list[str]) -> dict[str, float]:
    got = cochange(History.of(commits), ROW.get, len(PATHS), focus)
    return {PATHS[r]: float(v) for r, v in enumerate(got) if v}


def test_a_commit_of_n_files_gives_each_other_file_one_over_n_minus_one() -> None:
    commits = [["a.py", "b.py"], ["a.py", "b.py", "c.py"], ["b.py", "d.py"]]
    assert scores(commits, ["a.py"]) == {"b.py": 1.0 + 0.5, "c.py": 0.5}


def test_a_sweep_says_nothing_and_a_path_the_tree_lacks_is_not_counted() -> None:
    sweep = ["a.py", *(f"s{i:02}.py" for i in range(MAX_FILES))]  # MAX_FILES + 1 of the tree's
    gone = ["a.py", "deleted.py", "c.py"]  # two of the tree's files: c gets 1, not 1/2
    assert scores([sweep, gone], ["a.py"]) == {"c.py": 1.0}
    assert scores([sweep[:MAX_FILES]], ["a.py"]) == {
        p: 1 / (MAX_FILES - 1) for p in sweep[1:MAX_FILES]
    }


def test_focus_files_score_nothing_and_several_add_up() -> None:
    commits = [["a.py", "b.py", "c.py"], ["b.py", "d.py"]]
    assert scores(commits, ["a.py", "b.py"]) == {"c.py": 0.5 + 0.5, "d.py": 1.0}
    assert scores(commits, ["unknown.py"]) == {}


def test_commits_of_one_path_or_of_too_many_are_not_kept() -> None:
    huge = ["a.py", "b.py", *(f"x{i}.md" for i in range(SWEEP_PATHS))]
    history = History.of([["a.py"], huge, ["a.py", "a.py", "b.py"]])
    assert history.commits == (("a.py", "b.py"),)
    assert history.by_path == {"a.py": (0,), "b.py": (0,)}
    assert np.array_equal(cochange(History(), ROW.get, 3, ["a.py"]), np.zeros(3))
