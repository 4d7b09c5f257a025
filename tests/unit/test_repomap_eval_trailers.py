"""bench.repomap_eval's task texts carry no git trailer block (`Signed-off-by:`,
`Co-authored-by:`, `Change-Id:` ...): found as git finds it in a commit message, checked against
git itself (`git interpret-trailers --no-divider --parse`), and left out of the queries every
side is given."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bench.repomap_eval_texts import without_trailers

ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

KERNEL = """net: fix a leak in the rx path

The buffer is not freed when the ring is full.

Fixes: 1234567890ab ("net: add the rx ring")
Cc: stable@vger.kernel.org # 6.1+
Reported-by: A Tester <tester@example.org>
Signed-off-by: A Developer <dev@example.org>
Reviewed-by: A Maintainer
 <maintainer@example.org>
"""
SQUASHED = """Support IPv6 hosts in remote URLs (#1234)

* parse the brackets

* keep the port

Co-authored-by: someone <12345+someone@users.noreply.github.com>
Co-authored-by: other <other@example.com>"""
GERRIT = """Add the retry budget

Retries stop after the budget is spent.

Change-Id: I8d2a7f3c1e0b9a8d7c6b5a4f3e2d1c0b9a8f7e6d
Tested-by: CI Bot <ci@example.org>"""
MOSTLY_PROSE = """Move the cache

The old place was racy.
Thanks to the reviewers for
spotting it in time.
Signed-off-by: A Developer <dev@example.org>"""
PROSE_WITH_A_COLON = """Refactor the parser

Note: this keeps the old API.
It only moves code around."""
ONE_PARAGRAPH = "docs: fix a typo in the README"
WITH_A_LOG = """build: allow inotify on Android amd64 (#10783)

The crash, as logged:

```
---
F/DEBUG: backtrace
```

Signed-off-by: A Developer <dev@example.org>"""
TWO_BLOCKS = """Deterministic order in create table ddl

Render the table options in a deterministic order.

Fixes: #13523
Closes: #13524
Pull-request: https://github.com/sqlalchemy/sqlalchemy/pull/13524
Pull-request-sha: 4b3283906123068744943fa724722ee63b74e007

Change-Id: I2ac52e95616be9519ced8279824b0c44ef1078a9"""
CHERRY_PICK = """Fix the build on arm64

Missing include.

(cherry picked from commit 0123456789abcdef0123456789abcdef01234567)"""

MESSAGES = [KERNEL, SQUASHED, GERRIT, MOSTLY_PROSE, PROSE_WITH_A_COLON, ONE_PARAGRAPH, CHERRY_PICK,
            TWO_BLOCKS, WITH_A_LOG]  # fmt: skip


def _git_trailers(message: str) -> str:
    # --no-divider: in a commit message a `---` line is text (git log's %(trailers) reads so)
    done = subprocess.run(["git", "interpret-trailers", "--no-divider", "--parse"], input=message,
                          text=True, capture_output=True, env=ENV, check=True)  # fmt: skip
    return done.stdout


@pytest.mark.parametrize("message", MESSAGES)
def test_what_is_left_out_is_the_block_git_reads_as_trailers(message: str) -> None:
    kept = without_trailers(message)
    assert message.strip().startswith(kept)
    assert _git_trailers(kept) == ""  # git finds no trailer in what is left
    removed = message.strip()[len(kept) :]
    last = removed.strip().split("\n\n")[-1]  # the block git itself reads, the last one
    assert _git_trailers(f"title\n\n{last}\n") == _git_trailers(message)


def test_bodies_are_kept_and_only_the_blocks_go() -> None:
    assert without_trailers(KERNEL) == (
        "net: fix a leak in the rx path\n\nThe buffer is not freed when the ring is full."
    )
    assert without_trailers(SQUASHED).endswith("* keep the port")
    assert without_trailers(GERRIT).endswith("Retries stop after the budget is spent.")
    assert without_trailers(MOSTLY_PROSE) == "Move the cache"  # 1 of 4 lines, git's own prefix
    assert without_trailers(CHERRY_PICK).endswith("Missing include.")
    assert without_trailers(TWO_BLOCKS).endswith("in a deterministic order.")
    assert without_trailers(WITH_A_LOG).endswith("F/DEBUG: backtrace\n```")
    assert without_trailers(PROSE_WITH_A_COLON) == PROSE_WITH_A_COLON
    assert without_trailers(ONE_PARAGRAPH) == ONE_PARAGRAPH


def _commit(repo: Path, message: str, *names: str) -> None:
    for name in names:
        path = repo / name
        old = path.read_text() if path.exists() else ""
        path.write_text(f"{old}def f_{old.count('def')}():\n    pass\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=ENV)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "-m", message], check=True, env=ENV)  # fmt: skip


def _history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree `someone/tree` whose history gives three queries (newest first: SQUASHED, KERNEL,
    Start), as the evaluation finds it."""
    from bench import repomap_eval_data as data

    repo = tmp_path / "work"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=ENV)
    _commit(repo, "Start", "a.py", "b.py")
    _commit(repo, KERNEL, "a.py", "b.py")
    _commit(repo, SQUASHED, "a.py", "b.py")
    _commit(repo, "Pin", "a.py")
    pin = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=True, env=ENV).stdout.strip()  # fmt: skip
    bare = tmp_path / "git" / "someone+tree.git"  # as the evaluation's git dirs are
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True, env=ENV)
    monkeypatch.setenv("REPOMAP_EVAL_GIT", str(tmp_path / "git"))
    monkeypatch.setitem(data.REPOS, "someone/tree", (pin, "tuning"))


def test_the_evaluations_queries_carry_no_trailers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import repomap_eval_data as data

    _history(tmp_path, monkeypatch)
    got = data.queries("someone/tree", {"a.py", "b.py"})
    texts = [without_trailers(SQUASHED), without_trailers(KERNEL), "Start"]  # newest first
    assert [q.message for q in got] == texts
    assert not any("Signed-off-by" in q.message or "Co-authored-by" in q.message for q in got)


def test_a_run_may_ask_for_more_or_fewer_queries_a_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import repomap_eval_data as data

    _history(tmp_path, monkeypatch)
    monkeypatch.setenv("REPOMAP_EVAL_COMMITS", "2")
    got = data.queries("someone/tree", {"a.py", "b.py"})
    assert [q.message for q in got] == [without_trailers(SQUASHED), without_trailers(KERNEL)]
    monkeypatch.delenv("REPOMAP_EVAL_COMMITS")
    assert len(data.queries("someone/tree", {"a.py", "b.py"})) == 3 < data.COMMITS
