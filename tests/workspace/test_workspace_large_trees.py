"""What keeps a large tree (the kernel: 78,000 files) within its goals: the ignore screen,
figures before the repo map's tags, tags read a chunk at a time, one factorization per graph."""

from __future__ import annotations

from pathlib import Path

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.adapters.ignore_rules import Layer, is_ignored
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import tag_chunks as tags_module
from tokend.service.workspace.index import WorkspaceIndex

# The kernel's own kinds of patterns, with negations, anchors, folder-only and ** forms.
PATTERNS = [
    ".*", "*.a", "*.o", "*.[ch].orig", "/linux", "modules.order", "!.gitignore", "build/",
    "!/include/build/", "**/gen/*.c", "docs/**/*.txt", "/vmlinux*", "!vmlinux.lds.S", "*~",
    "Module.symvers", "/tar-install/", "\\#*#", "sub/*.h", "!keep.o",
]  # fmt: skip
SEGMENTS = ["linux", "a.o", "b.c", "x.h", "build", "include", "gen", "docs", "sub", ".git2",
            "vmlinux", "vmlinux.lds.S", "keep.o", "f~", "#t#", "n.txt", "modules.order"]  # fmt: skip


@settings(max_examples=300)
@given(
    lines=st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=8),
    parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4),
    is_dir=st.booleans(),
    base=st.sampled_from(["", "sub", "docs/x"]),
)
def test_the_screen_never_changes_a_decision(
    lines: list[str], parts: list[str], is_dir: bool, base: str
):
    """Judged with the screen or by pathspec alone, every path gets the same answer."""
    path = "/".join([base, *parts]) if base else "/".join(parts)
    screened = Layer.of(base, lines)
    plain = Layer(base, pathspec.GitIgnoreSpec.from_lines(lines))
    assert screened.screen is not None
    assert is_ignored([screened], path, is_dir) == is_ignored([plain], path, is_dir)


def test_the_screen_tries_the_any_folder_prefix_once():
    """Patterns that match in any folder (`*.o`) share pathspec's `(?:.+/)?`: the screen tries
    it once, not once per pattern (issue 22: the kernel's root .gitignore's screen was 0.82 of
    the walk's 2.7 CPU s, 0.35 so). That it decides as before: the property above."""
    layer = Layer.of("", ["*.o", "*.a", ".*", "modules.order", "/linux", "build/"])
    assert layer.screen is not None
    assert layer.screen.pattern.count("(?:.+/)?") == 1  # main: 5, one per such pattern
    assert is_ignored([layer], "drivers/net/x.o", False)
    assert not is_ignored([layer], "drivers/net/x.c", False)


def _tree(tmp_path: Path, files: int) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for n in range(files):
        (root / f"m{n}.py").write_text(f"def fn_{n}():\n    return fn_{(n + 1) % files}()\n")
    return root


def test_tags_are_read_a_chunk_at_a_time_with_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = _tree(tmp_path, 5)
    monkeypatch.setattr(tags_module, "CHUNK_FILES", 2)
    reports: list[str] = []
    index = WorkspaceIndex(
        root.as_uri(), root, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )
    index.build(reports.append)
    assert [r for r in reports if "symbols" in r] == [
        "5 files; symbols of 2 of 5 read",
        "5 files; symbols of 4 of 5 read",
        "5 files; symbols of 5 of 5 read",
    ]
    assert index.ready.is_set() and index.tags.ready.is_set()
    text = index.tags.repo_map(Focus(), 4096, len, "chars").text
    assert all(f"def fn_{n}():" in text for n in range(5))  # every chunk reached the graph


def test_figures_are_ready_before_the_tags_and_a_change_meanwhile_is_tagged(tmp_path: Path):
    root = _tree(tmp_path, 3)
    index = WorkspaceIndex(
        root.as_uri(), root, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )
    seen: dict[str, bool] = {}
    real_refresh = index.tags.refresh_walked

    def refresh(walk, overlays, progress=None):  # type: ignore[no-untyped-def]
        seen["ready during tags"] = index.ready.wait(10)  # (the tags begin during the walk)
        seen["tags ready during tags"] = index.tags.ready.is_set()
        (root / "late.py").write_text("def late_arrival():\n    pass\n")
        index.apply_changes([root / "late.py"])  # a watcher batch while the tags are read
        real_refresh(walk, overlays, progress)

    index.tags.refresh_walked = refresh  # type: ignore[method-assign]
    index.build()
    assert seen == {"ready during tags": True, "tags ready during tags": False}
    assert "late.py" in index.entries()
    assert "def late_arrival():" in index.tags.repo_map(Focus(), 4096, len, "chars").text


def test_a_failed_tag_build_does_not_leave_map_requests_waiting(tmp_path: Path):
    root = _tree(tmp_path, 2)
    index = WorkspaceIndex(
        root.as_uri(), root, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a grammar blew up")

    index.tags.refresh_walked = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        index.build()
    assert index.ready.is_set() and index.tags.ready.is_set()


def test_a_graph_too_large_to_factor_ranks_as_the_factored_one(monkeypatch: pytest.MonkeyPatch):
    """Past DIRECT_MAX_FILES the rank is solved iteratively: the same maps as SciPy's LU."""
    from tokend.adapters.tags import TagParser
    from tokend.core.repomap import graph as repomap
    from tokend.core.repomap import solve as repomap_solve
    from tokend.core.repomap.render import fit_map

    source = Path(__file__).resolve().parents[2] / "server" / "tokend"
    parser = TagParser()

    def line_of(path: str, line: int) -> str:
        return Path(path).read_text().split("\n")[line]

    tags = {p.as_posix(): parser.tags("python", p.read_bytes()) for p in source.rglob("*.py")}
    focuses = [Focus(), Focus(frozenset(sorted(tags)[:1])), Focus(identifiers=frozenset({"walk"}))]

    def maps() -> list[str]:
        graph = repomap.RepoGraph()
        graph.set_files(tags)
        return [fit_map(graph.rank(f, limit=2000), 1024, len, line_of).text for f in focuses]

    factored = maps()
    monkeypatch.setattr(repomap_solve, "DIRECT_MAX_FILES", 0)
    assert maps() == factored
