"""A map reads the lines it shows from the file, split only as far as the lines it shows
(service/workspace/tags.py): SQLAlchemy's first map split 19 MB of 423 files into 400,000
lines to show 462 of them (issue 18: the first map's `context/assemble`). Judged by what the
map shows (the file's own lines, as `bytes.split` cuts them) and by the memory a line near
the top of a long file takes to read."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.file_lines import FileLines
from tokend.service.workspace.index import WorkspaceIndex

LONG_FILE = "def start_engine():\n    return 1\n" + "x = 1\n" * 150_000  # ~0.9 MB


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"\n", b"\r\n", b"", b"\xe9t\xc3\xa9"])).map(b"".join),
    asked=st.lists(st.integers(0, 12), max_size=8),
)
def test_each_line_is_what_bytes_split_cuts(data: bytes, asked: list[int]) -> None:
    lines, whole = FileLines(data), data.split(b"\n")
    for n in asked:
        assert lines.line(n) == (whole[n] if n < len(whole) else b"")


def _index(tmp_path: Path) -> WorkspaceIndex:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "engine.py").write_text(LONG_FILE)
    (tree / "app.py").write_text("from engine import start_engine\n\nstart_engine()\n")
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.build()
    return index


def test_a_line_at_the_top_of_a_long_file_is_read_without_splitting_the_rest(
    tmp_path: Path,
) -> None:
    index = _index(tmp_path)
    try:
        read = index.tags._line_reader()
        tracemalloc.start()
        try:
            first = read("engine.py", 0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert first == "def start_engine():"
        assert read("engine.py", 150_001) == "x = 1" and read("engine.py", 150_002) == ""
        # the file's bytes and one copy of them (~1.8 MB); main: 150,000 lines (~6 MB more)
        assert peak < 3 * len(LONG_FILE)
        shown = index.tags.repo_map(Focus(frozenset({"app.py"})), 400, len, "chars").text
        assert "engine.py:\n│def start_engine():" in shown
    finally:
        index.close()


def test_a_line_at_the_end_of_a_long_file_holds_no_object_a_line() -> None:
    """Issue 22: a text focus's map on the kernel shows big headers' lines, held through the
    whole fit. Where each line ends is kept (8 bytes a line), beside the file's bytes."""
    data = LONG_FILE.encode()
    lines = FileLines(data)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        last = lines.line(150_001)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert last == data.split(b"\n")[150_001] == b"x = 1"
    assert lines.line(0) == b"def start_engine():" and lines.line(150_002) == b""
    # 150,002 line ends, 1.2 MB; main: a bytes object and a list slot a line (6.6 MiB)
    assert held < 2 * 2**20, f"{held / 2**20:.1f} MiB"


def test_a_map_holds_the_lines_it_may_show_not_the_files_it_read(tmp_path: Path) -> None:
    """Issue 22: a text focus's map on the kernel reads big headers; their bytes were held
    through the whole fit (13-14 MiB at the top of a request). Six files of ~0.9 MB, each
    with a definition at its top and at its end, all shown: the fit holds their candidate
    lines, and one file's bytes at a time."""
    tree = tmp_path / "tree"
    tree.mkdir()
    names = [f"engine{i}" for i in range(6)]
    for name in names:
        body = ("#" + "-" * 1999 + "\n") * 450  # (no words, few lines)
        (tree / f"{name}.py").write_text(
            f"def start_{name}():\n    return 1\n{body}def stop_{name}():\n    return 0\n"
        )
    calls = "".join(
        f"from {n} import start_{n}, stop_{n}\nstart_{n}()\nstop_{n}()\n" for n in names
    )
    (tree / "app.py").write_text(calls)
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.build()
    try:
        focus = Focus(frozenset({"app.py"}))
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            shown = index.tags.repo_map(focus, 4000, len, "chars").text
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        for name in names:
            assert f"{name}.py:\n│def start_{name}():\n⋮\n│def stop_{name}():" in shown
        size = (tree / "engine0.py").stat().st_size
        assert peak < 3 * size, (peak, size)  # main: the six files' bytes (6 x 0.9 MB) and more
    finally:
        index.close()
