"""What a ready daemon holds (issue 22: 135 MiB at start): SciPy (its sparse and linear-algebra
modules and their OpenBLAS, about 26 MiB) is loaded at the first repo map's solve, not when
`tokend serve` starts. Oracle: the shared libraries the real daemon process has mapped
(/proc/PID/maps), before and after a map request."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.daemon import paths

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/maps")


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def _scipy_mapped(pid: int) -> list[str]:
    """The SciPy files the process has mapped (its extension modules and bundled libraries)."""
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return sorted(
        {line.split()[-1] for line in lines if "/scipy/" in line or "/scipy.libs/" in line}
    )


def test_scipy_is_loaded_at_the_first_map_not_at_start(daemons: Daemons, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("from util import helper\n\ndef main():\n    helper()\n")
    (tmp_path / "util.py").write_text("def helper():\n    return 1\n")
    daemons.serve()
    pid = daemons.processes[-1].pid
    assert _scipy_mapped(pid) == []  # main: SciPy's modules mapped by the time it was ready
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": tmp_path.as_uri()}
    session = editor.request("session/create", params)["result"]["sessionId"]
    got = editor.request("repoMap/get", {"sessionId": session, "budgetTokens": 1024}, timeout=120)[
        "result"
    ]
    editor.close()
    assert "helper" in got["text"]
    assert _scipy_mapped(pid) != []  # the map's solve loaded it


def test_a_large_trees_map_loads_scipys_package_not(daemons: Daemons, tmp_path: Path) -> None:
    """Past DIRECT_MAX_FILES files the rank is core.repomap.krylov's (numpy, and SciPy's compiled
    CSC product loaded alone): the daemon maps no other SciPy file, and no Python module of
    SciPy's package is imported (main: scipy.sparse.linalg and its OpenBLAS, 34 MiB)."""
    from tokend.core.repomap.solve import DIRECT_MAX_FILES

    tree = tmp_path / "tree"
    tree.mkdir()
    files = DIRECT_MAX_FILES + 50
    for i in range(files):
        folder = tree / f"p{i // 1000}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i}.py").write_text(f"def f{i}():\n    return f{(i * 7) % files}()\n")
    daemons.serve()
    pid = daemons.processes[-1].pid
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": tree.as_uri()}
    session = editor.request("session/create", params)["result"]["sessionId"]
    got = editor.request("repoMap/get", {"sessionId": session, "budgetTokens": 1024}, timeout=600)[
        "result"
    ]
    editor.close()
    assert "def f" in got["text"]
    mapped = _scipy_mapped(pid)
    assert mapped and all("/scipy/sparse/_sparsetools" in path for path in mapped), mapped
