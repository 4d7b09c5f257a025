"""A small tree for the repo map's whole tokens (tests/workspace/test_repomap_whole_*.py):
`a_probe.py` and `b_probe.py` alike but for `reg_32` / `reg32` in a comment (the same words, so
only a file's whole tokens tell them apart; `a_probe.py` first in path order, where ties fall),
and four other files."""

from __future__ import annotations

from pathlib import Path


def probe_tree(tmp_path: Path) -> Path:
    """The tree, written under `tmp_path / "tree"`."""
    tree = tmp_path / "tree"
    tree.mkdir()
    body = "def probe_{n}(dev):\n    return dev.read(0x10) + {n}\n"
    (tree / "a_probe.py").write_text("# the reg_32 register of the probe\n" + body.format(n=1))
    (tree / "b_probe.py").write_text("# the reg32 register of the probe\n" + body.format(n=2))
    for i in range(4):
        (tree / f"other{i}.py").write_text(f"def other_{i}(x):\n    return x * {i}\n")
    return tree
