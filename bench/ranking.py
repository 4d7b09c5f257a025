"""Ranking quality: do maps focused on one file show the files that change with it?

Signal: flask's patch releases (2.2.0 ... 3.1.2, sdists from PyPI with `pip download
--no-binary :all: --no-deps`). For each pair of consecutive releases, the Python files whose
bytes differ (or that are new) in the later one form a group of files changed together. For
every file of a group of 2 to MAX_GROUP files (packaging files and `__version__` lines left
out of the comparison), a map of the later release's tree focused on
that file (tokend: focus files; Aider: its chat files) is asked at each budget, and we count
how many of the group's other files the map shows (a file is shown when its path heads a
block of the map text: the same parse for both sides). Aider is aider-chat 0.86.2's RepoMap
in the virtualenv bench.repomap builds, run offline as there.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.repomap import (
    AIDER_SCRIPT,
    OUT,
    TOKEND_SCRIPT,
    _aider_python,
    _env,
    _litellm_tokenizers,
    _run,
)

VERSIONS = ["2.2.0", "2.2.1", "2.2.2", "2.2.3", "2.2.4", "2.2.5", "2.3.0", "2.3.1", "2.3.2",
            "2.3.3", "3.0.0", "3.0.1", "3.0.2", "3.0.3", "3.1.0", "3.1.1", "3.1.2"]  # fmt: skip
BUDGETS = [1024, 4096]
MAX_GROUP = 12  # a larger group is a release's sweep (formatting, typing), not one change
PACKAGING = frozenset({"setup.py", "docs/conf.py"})


def _release(version: str) -> Path:
    target = OUT / "releases"
    target.mkdir(parents=True, exist_ok=True)
    for folder in target.iterdir():
        if folder.is_dir() and folder.name.lower() == f"flask-{version}":
            return folder
    archive = next(iter(target.glob(f"[Ff]lask-{version}.tar.gz")), None)
    if archive is None:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
             f"flask=={version}", "-d", str(target)], check=True)  # fmt: skip
        archive = next(iter(target.glob(f"[Ff]lask-{version}.tar.gz")))
    shutil.unpack_archive(archive, target)
    return _release(version)


def _python_files(tree: Path) -> dict[str, bytes]:
    """The tree's Python files but packaging (setup.py, docs/conf.py), each without its
    `__version__` lines: a release bumps those in every release, they say nothing."""
    files = {}
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree).as_posix()
        if rel not in PACKAGING:
            lines = path.read_bytes().splitlines(keepends=True)
            files[rel] = b"".join(line for line in lines if b"__version__" not in line)
    return files


def shown_files(text: str, candidates: set[str]) -> set[str]:
    """The candidate paths that head a block of a map (a line `path:` or `path`)."""
    heads = {
        line.rstrip().rstrip(":") for line in text.splitlines() if line and line[0] not in " │|⋮"
    }
    return candidates & heads


def run() -> str:
    aider = _aider_python()
    work = Path(tempfile.mkdtemp(prefix="tokend-bench-ranking-"))
    home = work / "home"
    home.mkdir()
    env = _env(home)
    env["TIKTOKEN_CACHE_DIR"] = _litellm_tokenizers(aider)
    hits: dict[tuple[str, int], list[float]] = {}
    found: dict[tuple[str, int], list[int]] = {}
    chance: dict[tuple[str, int], list[float]] = {}  # share of all files shown: a blind pick's
    width: dict[tuple[str, int], list[int]] = {}
    groups = 0
    pairs = 0
    try:
        for old, new in zip(VERSIONS, VERSIONS[1:], strict=False):
            before, after = _python_files(_release(old)), _python_files(_release(new))
            group = sorted(p for p, data in after.items() if before.get(p) != data)
            if not 2 <= len(group) <= MAX_GROUP:
                continue
            pairs += 1
            groups += 1
            calls = [{"budget": b, "files": [f], "identifiers": []} for b in BUDGETS for f in group]
            for side, python, script in (
                ("tokend", Path(sys.executable), TOKEND_SCRIPT),
                ("Aider", aider, AIDER_SCRIPT),
            ):
                tree = work / f"{side}-{new}"
                shutil.copytree(_release(new), tree)
                job = {"root": str(tree), "files": sorted(after), "calls": calls,
                       "cache": str(work / f"{side}-{new}.sqlite3")}  # fmt: skip
                for call, result in zip(calls, _run(python, script, job, env), strict=True):
                    focus = call["files"][0]
                    others = set(group) - {focus}
                    got = len(shown_files(result["text"], others))
                    hits.setdefault((side, call["budget"]), []).append(got / len(others))
                    shown = shown_files(result["text"], set(after) - {focus})
                    chance.setdefault((side, call["budget"]), []).append(
                        len(shown) / (len(after) - 1)
                    )
                    width.setdefault((side, call["budget"]), []).append(len(shown))
                    found.setdefault((side, call["budget"]), []).append(got)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [
        "### ranking: files changed together, shown by a map focused on one of them\n",
        f"flask's patch releases {VERSIONS[0]} -> {VERSIONS[-1]}: {groups} groups of 2-{MAX_GROUP} "
        "Python files changed between consecutive releases; one map per (file of a group, budget), "
        "focused on that file; share of the group's other files the map shows, beside the share a blind "
        "pick of as many files would show (files shown / all other Python files).\n",
        "| side | budget | maps | mean share shown | blind pick of as many files | files per map "
        "(median) | maps showing at least one | others shown (total) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for budget in BUDGETS:
        for side in ("tokend", "Aider"):
            shares, counts = hits[(side, budget)], found[(side, budget)]
            lines.append(
                f"| {side} | {budget:,} | {len(shares)} | {statistics.mean(shares) * 100:.1f}% | "
                f"{statistics.mean(chance[(side, budget)]) * 100:.1f}% | "
                f"{statistics.median(width[(side, budget)]):.0f} | "
                f"{sum(1 for c in counts if c) / len(counts) * 100:.0f}% | {sum(counts)} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
