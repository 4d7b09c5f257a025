"""A reference goes to the definition its file's imports reach, not to every file defining the
name: `repoMap/get` through `tokend lsp --standalone`'s server in the test's process on a real
folder where two files define the same name and the focus imports one of them (directly, or
through a package's `__init__.py` that re-exports it); the tags record what a file imports; a
graph updated in place when an imported file comes is the graph a fresh build makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import tokend_env
from tests.in_process import InProcessClient
from tokend.adapters.tags import TagParser
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

PAGE = (
    "from lib.z_right import render_widget\n"
    "from pkg import start_engine\n\n\n"
    "def show_page():\n    start_engine()\n    return render_widget(1)\n"
)


def o200k(text: str) -> int:
    return len(load_encoding("o200k_base").encode_ordinary(text))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Two definers of each name the focus uses; the one whose path sorts first (a tie's
    winner) is the one the focus does not import."""
    root = tmp_path / "ws"
    for folder in ("app", "lib", "pkg"):
        (root / folder).mkdir(parents=True)
    widget = "def render_widget(x):\n    return x\n"
    (root / "lib" / "a_wrong.py").write_text(widget)
    (root / "lib" / "z_right.py").write_text(widget)
    engine = "def start_engine():\n    return 1\n"
    (root / "pkg" / "a_legacy.py").write_text(engine)
    (root / "pkg" / "engine.py").write_text(engine)
    (root / "pkg" / "__init__.py").write_text("from .engine import start_engine\n")
    (root / "app" / "page.py").write_text(PAGE)
    return root


@pytest.fixture
async def server(tmp_path: Path):
    db = tmp_path / "tokend.sqlite3"
    home = tmp_path / "home"
    home.mkdir()
    client = await InProcessClient.start(
        tmp_path, env=tokend_env(TOKEND_DATABASE_URL=f"sqlite:///{db}", HOME=str(home))
    )
    await client.initialize()
    yield client
    assert await client.shutdown() == 0


async def test_a_reference_goes_to_the_definition_its_import_reaches(
    server: InProcessClient, tree: Path
):
    sid = (
        await server.request("session/create", {"model": "gpt-4o", "workspaceUri": tree.as_uri()})
    )["sessionId"]
    got = await server.request(
        "repoMap/get",
        {"sessionId": sid, "budgetTokens": 400,
         "focus": {"files": ["app/page.py"], "identifiers": []}},
    )  # fmt: skip
    order = [f["path"] for f in got["files"]]
    assert order.index("lib/z_right.py") < order.index("lib/a_wrong.py")
    assert order.index("pkg/engine.py") < order.index("pkg/a_legacy.py")  # via pkg/__init__.py
    assert got["tokens"] == o200k(got["text"]) <= 400


def test_tags_record_what_a_file_imports():
    parser = TagParser()
    python = parser.tags(
        "python", b"from ..a.b import c, d as e\nfrom . import x\nimport os.path\n"
    )
    assert python.imports == (".", "..a.b", "..a.b.c", "..a.b.d", ".x", "os.path")  # sorted
    script = parser.tags("typescript", b"import {a} from './x.js';\nexport * from '../w';\n")
    assert script.imports == ("../w", "./x.js")
    go = parser.tags("go", b'package a\nimport (\n "fmt"\n h "github.com/o/r/z"\n)\n')
    assert go.imports == ("fmt", "github.com/o/r/z")


def maps(index: WorkspaceIndex) -> list[tuple[str, tuple[str, ...]]]:
    graph = index.tags._graph
    out = []
    for path in sorted(graph.paths):
        focus = Focus(frozenset({path}))
        fitted = index.tags.repo_map(focus, 300, o200k, "o")
        out.append((fitted.text, tuple(p for p, _ in graph.rank_files(focus))))
    return out


def test_an_imported_file_that_comes_later_ranks_as_in_a_fresh_build(tree: Path, tmp_path: Path):
    right = tree / "lib" / "z_right.py"
    kept = right.read_text()
    right.unlink()
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "a.sqlite3"), index_ports()
    )
    index.build()
    maps(index)  # the rows are derived
    right.write_text(kept)
    index.apply_changes([right])
    fresh = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "b.sqlite3"), index_ports()
    )
    fresh.build()
    assert maps(index) == maps(fresh)
    ranked = [p for p, _ in index.tags._graph.rank_files(Focus(frozenset({"app/page.py"})))]
    assert ranked.index("lib/z_right.py") < ranked.index("lib/a_wrong.py")
