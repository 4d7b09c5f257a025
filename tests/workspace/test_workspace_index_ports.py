"""A workspace index works through the ports the composition root hands it (issue 18): its
folder's files (`FileTree`), the workspace cache (`FileCache`), the files read for the map
(`WorkspaceFiles`) and the tag parsing (`TagParsing`). Here each is an in-memory fake and the
folder does not exist on disk: the index builds, gives figures and counts, tags, and makes a
map from what the fakes hold alone (main: the index imported the adapters and read the disk)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tokend.core.repomap.graph import Focus
from tokend.core.repomap.tags import Definition, FileTags
from tokend.core.workspace import fileclass
from tokend.core.workspace.fileclass import DEFAULT_MAX_FILE_BYTES, FileEntry, FileRead
from tokend.core.workspace.own_paths import OwnPaths
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.tree_ports import IndexPorts, TagPool, Work

ROOT = Path("/nowhere/on/disk/ws")
FILES = {
    "app.py": b"def serve(port):\n    return open_socket(port)\n",
    "net.py": b"def open_socket(port):\n    return port\n",
    "notes.md": b"# notes\nserve the app\n",
}


class Rules:
    def __init__(self, root: Path, own: OwnPaths | None) -> None:
        self.own = own if own is not None else OwnPaths(root, ())
        self.forgotten = 0

    def ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        return self.own.owns(rel_path)

    def holds_rules(self, rel: str) -> bool:
        return rel.endswith(".gitignore")

    def forget(self, folder_rel: str | None = None) -> None:
        self.forgotten += 1


class Tree:
    """A folder of FILES, held in memory."""

    def __init__(self, root: Path, own: OwnPaths | None) -> None:
        self.root = root
        self.rules = Rules(root, own)

    def _entry(self, rel: str) -> FileEntry:
        size = len(FILES[rel])
        klass = fileclass.content_class_of(rel)
        return FileEntry(rel, size, 1, klass, fileclass.estimate_file_tokens(size, klass))

    def walk(self, **options: Any) -> Iterator[FileEntry]:  # max_bytes, progress, start
        start = options.get("start", "")
        return iter([self._entry(rel) for rel in sorted(FILES) if rel.startswith(start)])

    def list_folder(
        self, folder: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES
    ) -> tuple[list[FileEntry], list[str]]:
        return [self._entry(rel) for rel in sorted(FILES) if not folder], []

    def file_entry(self, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileEntry | None:
        return self._entry(rel) if rel in FILES else None

    def read_file(self, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileRead:
        if rel not in FILES:
            return FileRead(b"", None, "unreadable: no such file")
        return FileRead(FILES[rel], fileclass.decode_text(FILES[rel]), None)

    def resolve_inside(self, path: str) -> str:
        return path


class Files:
    """The workspace's files as the map reads them (only read_bytes is asked for)."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def read_bytes(
        self, root: Path, rel: str, limit: int | None = None, *, follow_inside: bool = True
    ) -> bytes:
        assert root == ROOT
        self.read.append(rel)
        return FILES[rel]

    @contextlib.contextmanager
    def reader(self, root: Path) -> Iterator[Callable[[str], bytes]]:
        yield lambda rel: self.read_bytes(root, rel)


class Cache:
    def __init__(self) -> None:
        self.kept_counts: dict[str, int] = {}
        self.kept_tags: dict[str, str] = {}
        self.kept_words: dict[str, str] = {}
        self.kept_hashes: dict[str, dict[str, tuple[int, int, str]]] = {}

    def counts(self, keys: Sequence[str]) -> dict[str, int]:
        return {k: self.kept_counts[k] for k in keys if k in self.kept_counts}

    def put_counts(self, counts: Mapping[str, int]) -> None:
        self.kept_counts.update(counts)

    def tags(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {k: json.loads(self.kept_tags[k]) for k in keys if k in self.kept_tags}

    def put_tag_texts(self, tags: Mapping[str, str]) -> None:
        self.kept_tags.update(tags)

    def words(self, keys: Sequence[str]) -> dict[str, Any]:
        return {k: json.loads(self.kept_words[k]) for k in keys if k in self.kept_words}

    def put_word_texts(self, words: Mapping[str, str]) -> None:
        self.kept_words.update(words)

    def hashes(
        self, root: str, paths: Sequence[str] | None = None
    ) -> dict[str, tuple[int, int, str]]:
        known = self.kept_hashes.get(root, {})
        return {p: h for p, h in known.items() if paths is None or p in paths}

    def put_hashes(self, root: str, hashes: Mapping[str, tuple[int, int, str]]) -> None:
        self.kept_hashes.setdefault(root, {}).update(hashes)


class Tagging:
    """Tags by a rule of thumb: each `def NAME(` defines NAME, each other word refers to it."""

    queries_version = 7
    pool_min_files = 1_000
    parsed: list[str] = []  # paths, across every instance

    def __init__(self, stopping: threading.Event) -> None:
        self.closed = False

    def pool(self, workers: int | None) -> AbstractContextManager[TagPool]:
        raise AssertionError("three files start no pool")

    def word_pool(self, workers: int | None) -> AbstractContextManager[TagPool]:
        raise AssertionError("three files start no pool")

    def parse_json(self, work: Sequence[Work], words: bool = True) -> list[str]:
        out = []
        for path, _language, source in work:
            Tagging.parsed.append(path)
            lines = source.decode().split("\n")
            defs = [
                Definition(line.split("def ", 1)[1].split("(")[0], n, line)
                for n, line in enumerate(lines)
                if line.startswith("def ")
            ]
            words = source.decode().replace("(", " ").replace(")", " ").split()
            refs = {w: 1 for w in words if w.isidentifier() and w not in {d.name for d in defs}}
            out.append(json.dumps(FileTags(tuple(defs), refs).to_json()))
        return out

    def count_words(
        self, work: Sequence[Work], whole: bool = True
    ) -> list[Mapping[int, int] | None]:
        return [{len(word): 1 for word in source.split()} for _path, _lang, source in work]

    def release_freed_memory(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _index(cache: Cache, files: Files) -> WorkspaceIndex:
    ports = IndexPorts(tree=Tree, files=files, tagging=Tagging)  # type: ignore[arg-type]
    return WorkspaceIndex(ROOT.as_uri(), ROOT, cache, ports)  # type: ignore[arg-type]


def test_an_index_reads_tags_and_maps_through_its_ports_alone() -> None:
    assert not ROOT.exists()
    Tagging.parsed.clear()
    cache, files = Cache(), Files()
    index = _index(cache, files)
    index.build()
    assert sorted(index.entries()) == sorted(FILES)
    figures = {f.path: f for f in index.figures(None, None, None)}
    assert figures["app.py"].size_bytes == len(FILES["app.py"])
    assert figures["app.py"].basis == "estimate"
    counted = index.figures(["net.py"], lambda text: len(text.split()), "words")
    assert counted[0].tokens == len(FILES["net.py"].split())
    assert any(k.startswith("words:") for k in cache.kept_counts)  # kept by content hash
    assert sorted(Tagging.parsed) == ["app.py", "net.py"]  # the sources; notes.md has no grammar
    assert index.tags.defines("open_socket") and index.tags.defines("serve")
    assert all(key.startswith("v7:python:") for key in cache.kept_tags)  # the port's version
    focus = Focus(frozenset({"app.py"}), frozenset(), "")
    text = index.tags.repo_map(focus, 512, len, "chars").text
    assert "def open_socket(port):" in text  # the line, read through the `files` port
    assert "net.py" in files.read
    tagging = index.tags._tagging
    index.close()
    assert tagging.closed  # type: ignore[attr-defined]


def test_a_second_index_on_the_same_cache_parses_nothing_again() -> None:
    cache = Cache()
    first = _index(cache, Files())
    first.build()
    first.close()
    Tagging.parsed.clear()
    again = _index(cache, Files())
    again.build()
    assert Tagging.parsed == []  # the hashes and tags the first one kept, read through the port
    assert again.tags.defines("open_socket")
    again.close()
