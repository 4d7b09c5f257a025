"""The seams of a workspace's index and its tags (service.workspace.index, tags, tag_chunks):
the folder's files under its ignore rules, the workspace cache, the tag parsing and the
repository's history. The composition root (service/app_workspaces.py) hands in the adapters'
(adapters.file_index.FolderTree, adapters.workspace_cache.WorkspaceCache,
adapters.tag_parsing.TagParsing, adapters.workspace_fs, adapters.git_history); a test may hand
in fakes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.solve import Product, no_product
from tokend.core.repomap.tags import FileTags
from tokend.core.workspace.fileclass import DEFAULT_MAX_FILE_BYTES, FileEntry, FileRead
from tokend.core.workspace.own_paths import OwnPaths
from tokend.service.foreground import Foreground
from tokend.service.ports import WorkspaceFiles

Work = tuple[str, str, bytes]  # (path, language, source)
Parsed = tuple[str, FileTags, PackedTags]  # a pool's: the JSON text, the tags but names, packed
BARE = "bare:"  # words_key's
# the paths each of the repository's newest commits changed (core.repomap.cochange), read in the
# workspace folder; set: a stop (none read then)
History = Callable[[Path, threading.Event], Sequence[Sequence[str]]]


def no_history(root: Path, stopping: threading.Event) -> Sequence[Sequence[str]]:
    return ()


def no_mark(root: Path) -> object:
    """What says the history moved since it was read (compared for equality; None: nothing)."""
    return None


class FolderRules(Protocol):
    """A folder's ignore rules (its ignore files, .git/info/exclude, the user's excludes), which
    always leave out tokend's own folders inside it (`own`)."""

    @property
    def own(self) -> OwnPaths: ...

    def ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        """Whether `rel_path` or any folder above it is left out."""
        ...

    def holds_rules(self, rel: str) -> bool:
        """Whether `rel` is a file the rules are read from (once it changed: `forget`)."""
        ...

    def forget(self, folder_rel: str | None = None) -> None:
        """Read the rules again (all of them, or one folder's) on next use."""
        ...


class FileTree(Protocol):
    """One workspace folder's files as its index reads them: what the rules keep, each file an
    entry (or one with a `skipped` reason), paths posix and relative to `root`."""

    @property
    def root(self) -> Path: ...

    @property
    def rules(self) -> FolderRules: ...

    def walk(
        self,
        *,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
        progress: Callable[[int], None] | None = None,
        start: str = "",
    ) -> Iterator[FileEntry]:
        """Every file of the tree (or of its folder `start`), `progress(n)` every few files."""
        ...

    def list_folder(
        self, folder: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES
    ) -> tuple[list[FileEntry], list[str]]:
        """The files directly in `folder` ("" for the root) and its subfolders."""
        ...

    def file_entry(self, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileEntry | None:
        """`rel`'s entry now; None when it is no file."""
        ...

    def read_file(self, rel: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileRead:
        """`rel`'s bytes and text now, never through a symlink that leaves the root."""
        ...

    def resolve_inside(self, path: str) -> str:
        """A client's `path` relative to the root; InvalidParams when it leaves the root."""
        ...


def words_key(key: str, whole: bool) -> str:
    """The cache's key for the words counted for the tags of `key`: with their whole tokens
    (`whole`), the tags' key; without (a tree of more than LARGE_TREE files, core.repomap.whole
    .keeps_whole), BARE before it, so that a count of one kind is never read as the other."""
    return key if whole else BARE + key


class FileCache(Protocol):
    """The workspace cache (one per user): exact counts and tags by content hash, and each
    file's (size, mtime_ns, sha256) as last seen, by workspace root."""

    def counts(self, keys: Sequence[str]) -> dict[str, int]: ...

    def put_counts(self, counts: Mapping[str, int]) -> None: ...

    def tags(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]: ...

    def put_tag_texts(self, tags: Mapping[str, str]) -> None: ...

    def words(self, keys: Sequence[str]) -> dict[str, Any]:
        """Words' key (words_key) -> the words kept apart for it (a FileTags JSON's "w" value)."""
        ...

    def put_word_texts(self, words: Mapping[str, str]) -> None: ...

    def hashes(
        self, root: str, paths: Sequence[str] | None = None
    ) -> dict[str, tuple[int, int, str]]: ...

    def put_hashes(self, root: str, hashes: Mapping[str, tuple[int, int, str]]) -> None: ...


class TagPool(Protocol):
    """Tag worker processes for one refresh of many files (two parses may run at once, each
    in a thread of its own: the next takes the workers the one before is done with)."""

    def parse_packed(self, work: Sequence[Work], words: bool = True) -> list[Parsed]:
        """Each file's tags (without `words`: their words empty, none in the text)."""
        ...

    def count_words(
        self, work: Sequence[Work], whole: bool = True
    ) -> list[Mapping[int, int] | None]:
        """Each file's words, with their whole tokens but without `whole` (None: not counted,
        its worker died on it)."""
        ...


class TagParsing(Protocol):
    """A workspace's tag parsing (tree-sitter): one per index, ended with it (`close`)."""

    @property
    def queries_version(self) -> int:
        """In the tags' cache keys: tags cached under another version are not read."""
        ...

    @property
    def pool_min_files(self) -> int:
        """Files to parse from which a refresh is worth starting a pool."""
        ...

    def pool(self, workers: int | None) -> AbstractContextManager[TagPool]:
        """Worker processes (`workers`; None: one per core), ended when the refresh is."""
        ...

    def word_pool(self, workers: int | None) -> AbstractContextManager[TagPool]:
        """`pool`'s for counting words alone (its workers parse no tags: smaller processes)."""
        ...

    def parse_json(self, work: Sequence[Work], words: bool = True) -> list[str]:
        """Each (path, language, source)'s tags as JSON text, without a pool (without `words`,
        their words may be left out)."""
        ...

    def count_words(
        self, work: Sequence[Work], whole: bool = True
    ) -> list[Mapping[int, int] | None]:
        """Each source's words (core.repomap.text.count_words: with their whole tokens but
        without `whole`), without a pool."""
        ...

    def release_freed_memory(self) -> None:
        """Give the memory this process freed back to the system (the words' pass, now and
        then: word_pass.OwedWords)."""
        ...

    def close(self) -> None: ...


def pool_for(
    tagging: TagParsing, workers: int | None, files: int, words: bool = False
) -> AbstractContextManager[TagPool | None]:
    """Worker processes (`workers`: None, one per core; 0, none) for a refresh of `files` files
    (the first build), ended with it; none for a few files (a save), which the calling thread
    parses. With `words`, for counting words: workers that count words alone (smaller
    processes than the tag workers: issue 22, the daemon's peak with them)."""
    if workers == 0 or files < tagging.pool_min_files:
        return nullcontext()
    return (tagging.word_pool if words else tagging.pool)(workers or None)


@dataclass(frozen=True, slots=True)
class IndexPorts:
    """What a workspace index works through: its folder's files (`tree(root, own)`), the files
    read for the map, its tag parsing (`tagging(stopping)`: set, a parse gives up), the
    process's requests being served, which its background counting lets go first, the
    compiled product a large graph's rank is solved with (`rank_product`), and the
    repository's history (`history`: none, no `cochange` signal; `history_mark`: when it moved)."""

    tree: Callable[[Path, OwnPaths | None], FileTree]
    files: WorkspaceFiles
    tagging: Callable[[threading.Event], TagParsing]
    foreground: Foreground = field(default_factory=Foreground)
    rank_product: Product = no_product  # SciPy's compiled product for a large graph's rank
    history: History = no_history
    history_mark: Callable[[Path], object] = no_mark  # changed: the history is read again
