"""The first build tags the tree without the words of its files, and counts them once the first
map can be made (issue 22: the words were a fifth of the tag workers' CPU on the kernel, and the
unfocused first map reads none). A map that reads words (a text focus, a file focus) asked
before they are all in waits for them; a build killed between the two passes leaves a cache
the next build uses, counting only the words. The oracle for what a file says is
core.repomap.tags.text_words, the plain reading of its text (not the workers' count_words)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import tokend
from tokend.adapters import tag_parsing
from tokend.adapters.tag_workers import POOL_MIN_FILES, TagWorkers
from tokend.adapters.tags import parser as tag_parser
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.core.repomap.tags import text_words
from tokend.core.repomap.words import sections
from tokend.service.app import App
from tokend.service.app_workspaces import index_ports
from tokend.service.assembly.assemble_input import AssembleInput
from tokend.service.assembly.workspace_window import with_workspace
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.session_files import change_files

ROOT = Path(__file__).resolve().parents[2]
TEXT = Focus(frozenset(), frozenset(), "the frobnicator drops quuxes when the spindle rusts")


def _tree(tmp_path: Path, files: int = 12) -> Path:
    """Python files whose comments say what their names do not (a text focus finds them by
    what they say), and a few that say it more often than others."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for i in range(files):
        said = " ".join(["frobnicator quuxes"] * (i % 4) + ["spindle"] * (i % 3))
        (tree / "pkg" / f"m{i}.py").write_text(
            f"# module {i}: {said}\n"
            f"def handler_{i}(value):\n"
            f'    """{said} rusts"""\n'
            f"    return helper_{(i + 1) % files}(value)\n\n"
            f"def helper_{i}(value):\n    return value + {i}\n"
        )
    return tree


def _index(tree: Path, cache: Path, workers: int = 0) -> WorkspaceIndex:
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
    index.tags.pool_workers = workers
    return index


def _rows_say_what_the_files_say(index: WorkspaceIndex, tree: Path) -> None:
    """Each file's row of the word table is text_words of its text (counts capped at 255)."""
    graph = index.tags._graph
    assert graph.paths
    for row, path in enumerate(graph.paths):
        expected = sorted(text_words((tree / path).read_text()).items())
        span = slice(graph.words.offsets[row], graph.words.offsets[row + 1])
        ids, counts = graph.words.ids[span].tolist(), graph.words.counts[span].tolist()
        got = list(zip(ids, counts, strict=True))
        assert got == [(w, min(n, 255)) for w, n in expected], path


def _counts_recorded(index_of: list[WorkspaceIndex], monkeypatch: pytest.MonkeyPatch) -> list:
    """Each count of a file's words, with whether the first build's tags were in then."""
    calls: list[bool] = []
    real = tag_parser.count_words

    def recorded(source: bytes, whole: bool = True) -> dict[int, int]:
        calls.append(index_of[0].tags.ready.is_set())
        return real(source, whole)

    monkeypatch.setattr(tag_parser, "count_words", recorded)
    monkeypatch.setattr(tag_parsing, "count_words", recorded, raising=False)
    return calls


def _hold_words(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Every word count (tag_parsing.count_words) waits for the event returned, then counts."""
    release = threading.Event()
    real = tag_parsing.count_words if hasattr(tag_parsing, "count_words") else None

    def held(source: bytes, whole: bool = True) -> dict[int, int]:
        release.wait(60)
        assert real is not None
        return real(source, whole)

    monkeypatch.setattr(tag_parsing, "count_words", held, raising=False)
    return release


def test_no_word_is_counted_before_the_first_maps_tags_are_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real build in this process (no worker processes, so every count is seen here).
    Main: every file's words were counted with its tags, before the first map could be made."""
    tree = _tree(tmp_path)
    index_of: list[WorkspaceIndex] = []
    calls = _counts_recorded(index_of, monkeypatch)
    index_of.append(_index(tree, tmp_path / "c.sqlite3"))
    index = index_of[0]
    try:
        index.build()
        assert len(calls) == 12  # each file's words, once
        assert all(calls)  # every one after the tags were in (main: [False] * 12)
        assert index.tags.words_ready.is_set()
        _rows_say_what_the_files_say(index, tree)
    finally:
        index.close()


def test_a_text_focus_asked_before_the_words_waits_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The words held back (the count waits for `release`): a text focus asked once the tags
    are in is answered only after the words are, and is the map asked afterwards. Main: the
    words came with the tags, and the early map was answered before the release."""
    tree = _tree(tmp_path)
    release, released = _hold_words(monkeypatch), []
    index = _index(tree, tmp_path / "c.sqlite3")
    builder = threading.Thread(target=index.build)
    builder.start()
    early: list[tuple[object, bool]] = []

    def ask() -> None:
        fitted = index.tags.repo_map(TEXT, 256, len, "chars")
        early.append(((fitted.text, fitted.ranked), bool(released)))

    try:
        assert index.tags.ready.wait(60)
        unfocused = index.tags.repo_map(Focus(), 512, len, "chars")  # reads no words: at once
        assert unfocused.text
        asker = threading.Thread(target=ask)
        asker.start()
        asker.join(5)  # (it cannot be answered before the release; main's was, at once)
        released.append(True)
        release.set()
        asker.join(60)
        builder.join(60)
        fitted = index.tags.repo_map(TEXT, 256, len, "chars")
        after = (fitted.text, fitted.ranked)
        assert fitted.ranked[0][0] in {"pkg/m3.py", "pkg/m7.py", "pkg/m11.py"}  # say it most
        assert early == [(after, True)]  # answered after the release, the same map
        assert index.tags.repo_map(Focus(), 512, len, "chars") is unfocused  # kept: no words read
    finally:
        release.set()
        index.close()
        builder.join(60)


_KILLED_BETWEEN_THE_PASSES = """
import os, signal, sys
from pathlib import Path
from tokend.adapters import tag_parsing
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.service.app import App
from tokend.service.app_workspaces import index_ports
from tokend.service.assembly.assemble_input import AssembleInput
from tokend.service.assembly.workspace_window import with_workspace
from tokend.service.workspace.index import WorkspaceIndex

def killed(source, whole=True):  # the first word counted: the tags are in the cache, no word is
    os.kill(os.getpid(), signal.SIGKILL)

tag_parsing.count_words = killed
tree, cache = Path(sys.argv[1]), Path(sys.argv[2])
index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
index.tags.pool_workers = 0
index.build()
"""


def test_a_build_killed_between_its_tags_and_its_words_leaves_a_cache_that_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed (SIGKILL) at its first word count: its cache holds every file's tags
    and no words. The next build parses no file again, counts every file's words, and its rows
    say what the files say; the build after that counts nothing. Main: the first process was
    not killed (no count came after the tags)."""
    tree, cache = _tree(tmp_path), tmp_path / "c.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(Path(tokend.__file__).parents[1])}  # this tokend
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_BETWEEN_THE_PASSES, str(tree), str(cache)],
        env=env,
        timeout=120,
    )
    assert done.returncode == -9
    with sqlite3.connect(cache) as db:
        kept = [json.loads(t) for (t,) in db.execute("SELECT tags FROM file_tags")]
    assert len(kept) == 12 and not any("w" in tags for tags in kept)  # tags without words
    parsed: list[str] = []
    real_raw = tag_parser.TagParser.raw

    def raw(self: tag_parser.TagParser, language: str, source: bytes, *more: bool) -> object:
        parsed.append(language)
        return real_raw(self, language, source, *more)

    monkeypatch.setattr(tag_parser.TagParser, "raw", raw)
    index_of: list[WorkspaceIndex] = []
    calls = _counts_recorded(index_of, monkeypatch)
    for counted in (12, 0):  # the second build after the kill, then a third
        index_of[:] = [_index(tree, cache)]
        try:
            index_of[0].build()
            assert (parsed, len(calls)) == ([], counted)
            _rows_say_what_the_files_say(index_of[0], tree)
        finally:
            index_of[0].close()
        calls.clear()


def test_the_workers_tag_without_words_and_count_them_apart() -> None:
    """Real tag workers: tags asked without words carry none (in their text for the cache and
        in what the graph is given); the words counted apart are text_words of each file (and its
    whole tokens after them: tests/workspace/test_repomap_whole_tokens.py)."""
    sources = sorted((ROOT / "server" / "tokend" / "core" / "repomap").glob("*.py"))
    work = [(p.name, "python", p.read_bytes()) for p in sources]
    with TagWorkers(2) as workers:
        tagged = workers.parse_packed(work, words=False)
        counted = workers.count_words(work)
    assert all("w" not in json.loads(text) and not light.words for text, light, _ in tagged)
    assert all(len(packed.def_keys) for _, _, packed in tagged[1:])  # (the tags themselves)
    expected = [text_words(source.decode()) for _, _, source in work]
    assert [dict(sections(said)[0]) for said in counted] == expected  # (the words: before MARK)


def test_a_build_with_workers_counts_every_files_words(tmp_path: Path) -> None:
    """Both passes through real worker processes (a tree big enough for a pool): the rows say
    what the files say, and the tags' cache kept no words in the tags' own texts."""
    tree = _tree(tmp_path, POOL_MIN_FILES + 20)
    index = _index(tree, tmp_path / "c.sqlite3", workers=2)
    try:
        index.build()
        _rows_say_what_the_files_say(index, tree)
    finally:
        index.close()
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:
        texts = [json.loads(t) for (t,) in db.execute("SELECT tags FROM file_tags")]
        (words,) = db.execute("SELECT count(*) FROM file_words").fetchone()
    assert len(texts) == words == POOL_MIN_FILES + 20
    assert not any("w" in tags for tags in texts)


async def test_assemble_leaves_out_a_map_that_reads_words_until_they_are_in(
    app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """context/assemble's map for a session with a chat file (its default focus reads what
    files say): left out with a warning while the words are counted, included once they are
    in. Main: the words came with the tags, and the map was included as soon as they were."""
    tree = _tree(tmp_path)
    release = _hold_words(monkeypatch)
    sid = app.service.sessions.create_session("gpt-4o", workspace_uri=tree.as_uri()).id
    try:
        await change_files(app.workspaces, sid, ["pkg/m3.py"], read_only=False)
        index = app.workspaces.get(tree.as_uri())
        assert index is not None and index.tags.ready.wait(60)
        data = app.service.sessions.state(sid).data
        early, warned = with_workspace(app.workspaces, data, AssembleInput())
        assert early.repo_map is None
        assert "repo map left out: what the workspace's files say is being counted" in warned
    finally:
        release.set()
    assert index.tags.words_ready.wait(60)
    later, warned = with_workspace(app.workspaces, data, AssembleInput())
    assert later.repo_map and not [w for w in warned if w.startswith("repo map")]
