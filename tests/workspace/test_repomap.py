"""The repo map on real source (tokend's own server tree), judged by tiktoken's counts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.adapters.tags import TagParser
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.render import fit_map
from tokend.core.repomap.tags import FileTags
from tokend.core.workspace.fileclass import language_of
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "server" / "tokend"


def o200k(text: str) -> int:
    return len(load_encoding("o200k_base").encode_ordinary(text))


def source_tags() -> dict[str, FileTags]:
    parser = TagParser()
    files = sorted(p for p in SOURCE.rglob("*.py"))
    return {p.relative_to(ROOT).as_posix(): parser.tags("python", p.read_bytes()) for p in files}


def build_graph() -> RepoGraph:
    graph = RepoGraph()
    graph.set_files(TAGS)
    return graph


def line_of(path: str, line: int) -> str:
    """The line as the file on disk has it (the map reads it when it shows it)."""
    lines = (ROOT / path).read_bytes().split(b"\n")
    return lines[line].decode("utf-8", "replace") if line < len(lines) else ""


TAGS = source_tags()
GRAPH = build_graph()
PATHS = sorted(TAGS)
NAMES = sorted({d.name for t in TAGS.values() for d in t.definitions})


@settings(max_examples=60)
@given(
    budget=st.integers(min_value=1, max_value=6000),
    files=st.lists(st.sampled_from(PATHS), max_size=3),
    names=st.lists(st.sampled_from(NAMES), max_size=3),
)
def test_never_over_budget(budget: int, files: list[str], names: list[str]):
    focus = Focus(frozenset(files), frozenset(names))
    fitted = fit_map(GRAPH.rank(focus, limit=budget + 100), budget, o200k, line_of)
    assert o200k(fitted.text) == fitted.tokens <= budget
    assert not set(fitted.files) & set(files)  # the focus files are in the chat already


@pytest.mark.parametrize("budget", [1024, 2048, 4096])
def test_fills_within_3_percent_when_there_are_enough_symbols(budget: int):
    fitted = fit_map(GRAPH.rank(Focus(), limit=budget + 100), budget, o200k, line_of)
    assert budget * 0.97 <= o200k(fitted.text) <= budget


def test_focus_brings_the_focused_symbols_first():
    fitted = fit_map(
        GRAPH.rank(Focus(identifiers=frozenset({"fit_map"})), limit=400), 300, o200k, line_of
    )
    assert "server/tokend/core/repomap/render.py:" in fitted.text and "def fit_map(" in fitted.text


def test_tags_cover_every_required_language():
    samples = {
        "a.js": b"class Cart { total() { return sum(this.items) } }\nfunction sum(xs) { return 0 }\n",
        "a.ts": b"interface Shape { area(): number }\nclass Sq implements Shape { area() { return helper() } }\n",
        "a.tsx": b"function App() { return <div>{render()}</div> }\n",
        "a.go": b"package m\ntype Server struct{}\nfunc (s *Server) Run() { start() }\n",
        "a.rs": b"struct Pool;\nimpl Pool { fn get(&self) -> Conn { connect() } }\n",
        "A.java": b"class Repo { void save() { store.put(); } }\n",
        "a.c": b"struct node { int v; };\nint walk(struct node *n) { return visit(n); }\n",
        "a.cpp": b"namespace db { class Table { public: void scan() { db::flush(); } }; }\n",
        "a.rb": b"module Shop\n  class Cart\n    def total\n      sum(items)\n    end\n  end\nend\n",
    }
    parser = TagParser()
    for name, source in samples.items():
        language = language_of(name)
        assert language is not None
        tags = parser.tags(language, source)
        assert tags.error is None and tags.definitions, name
        assert tags.references, name


def _map_in_a_new_process(seed: str) -> str:
    script = (
        "import json,sys;from tests.workspace.test_repomap import GRAPH,o200k,line_of;"
        "from tokend.core.repomap.graph import Focus;from tokend.core.repomap.render import fit_map;"
        "f=Focus(frozenset(['server/tokend/core/budget/limits.py']),frozenset(['assemble']));"
        "print(json.dumps(fit_map(GRAPH.rank(f,limit=2200),2048,o200k,line_of).text))"
    )
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(out.stdout))


def test_the_same_tree_and_focus_give_the_same_text_in_any_process():
    texts = {_map_in_a_new_process(seed) for seed in ("1", "2", "12345")}
    assert len(texts) == 1 and next(iter(texts))


def test_a_changed_file_is_parsed_alone_and_a_restart_parses_nothing(tmp_path: Path):
    root = tmp_path / "ws"
    shutil.copytree(SOURCE / "core", root / "core")
    cache_path = tmp_path / "cache.sqlite3"

    def tag_rows() -> int:
        cache = WorkspaceCache(cache_path)
        rows = cache._db.execute("SELECT COUNT(*) FROM file_tags").fetchone()[0]
        cache.close()
        return int(rows)

    index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(cache_path), index_ports())
    index.build()
    python_files = len(list((root / "core").rglob("*.py")))
    assert tag_rows() == python_files
    before = index.tags.repo_map(Focus(), 1024, o200k, "o200k_base")

    edited = root / "core" / "budget" / "limits.py"
    edited.write_text(edited.read_text() + "\n\ndef brand_new_helper(x):\n    return x\n")
    changed = index.apply_changes([edited])
    assert changed == {"core/budget/limits.py"} and tag_rows() == python_files + 1
    assert (
        index.tags.repo_map(
            Focus(identifiers=frozenset({"brand_new_helper"})), 1024, o200k, "o200k_base"
        ).text
        != before.text
    )

    restarted = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(cache_path), index_ports())
    parsed: list[str] = []
    original = restarted.tags._tagging.parser.tags
    restarted.tags._tagging.parser.tags = lambda lang, src: (
        parsed.append(lang) or original(lang, src)
    )  # type: ignore[method-assign]
    restarted.build()
    assert parsed == []
    again = restarted.tags.repo_map(
        Focus(identifiers=frozenset({"brand_new_helper"})), 1024, o200k, "o200k_base"
    )
    assert "brand_new_helper" in again.text
