"""bench.repomap_eval_baselines.cochange_ranking, the co-change baseline: files by their commits
with the focus, a commit of n files giving 1 / (n - 1), a sweep none; worked out by hand."""

from __future__ import annotations

from bench.repomap_eval_baselines import cochange_ranking

FILES = ["a.py", "b.py", "c.py", "d.py", *(f"s{i:02}.py" for i in range(12))]


def test_commits_with_the_focus_rank_first_then_paths() -> None:
    commits = [["a.py", "c.py"], ["a.py", "b.py", "c.py", "README.md"], ["b.py", "d.py"]]
    # c: 1 + 1/2, b: 1/2 (README.md is not one of the files), d: none
    assert cochange_ranking("a.py", FILES, commits)[:3] == ["c.py", "b.py", "d.py"]


def test_a_sweep_of_more_than_twelve_files_gives_nothing() -> None:
    sweep = ["d.py", *(f"s{i:02}.py" for i in range(12))]
    ranked = cochange_ranking("d.py", FILES, [sweep, ["d.py", "s11.py"]])
    assert ranked[0] == "s11.py" and ranked[1:4] == ["a.py", "b.py", "c.py"]
