"""WorkspaceIndex: one workspace folder's files, their figures, unsaved buffers and tags.

Written by the build (a thread of its own), the watcher's batches and the document
notifications; all under one lock, which is never held while a file is read, parsed or
counted. Readers get copies. Exact counts are computed by the caller's counter off the event
loop and kept by content hash (in memory and in the workspace cache), so a file counted once
is never tokenized again, in this process or the next.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from tokend.core.errors import Stopping
from tokend.core.workspace.fileclass import (
    DEFAULT_MAX_FILE_BYTES,
    INVALID_UTF8_REASON,
    FileEntry,
    content_class_of,
    estimate_file_tokens,
)
from tokend.core.workspace.own_paths import OwnPaths
from tokend.service.workspace.buffers import BufferQueue
from tokend.service.workspace.entries import Entries, Packed, Under, pack
from tokend.service.workspace.figures import Basis, FileFigure, FileText
from tokend.service.workspace.tag_chunks import in_order
from tokend.service.workspace.tags import WorkspaceTags
from tokend.service.workspace.tree_ports import FileCache, IndexPorts
from tokend.service.workspace.walk_stream import WalkStream, fill, walking
from tokend.service.workspace.watch_batch import batch_paths, entries_now

log = logging.getLogger(__name__)

Count = Callable[[str], int]
BufferApplied = Callable[
    [str, list[FileFigure]], None
]  # (path, its figures), on the buffers' thread


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class WorkspaceIndex:
    def __init__(
        self, uri: str, root: Path, cache: FileCache, ports: IndexPorts, own: OwnPaths | None = None
    ) -> None:
        """`own`: tokend's own folders inside `root`, never indexed, mapped or checkpointed;
        `ports`: what the index works through (the composition root's adapters)."""
        self.uri = uri
        self.root = root
        self.cache = cache
        self.max_bytes = DEFAULT_MAX_FILE_BYTES
        self.tree = ports.tree(root, own)
        self.rules = self.tree.rules
        self.stopping = threading.Event()  # set by close(): every loop here gives up
        self.tags = WorkspaceTags(root, cache, ports, self._overlay, self.stopping, self.max_bytes)
        self.ready = threading.Event()
        self._lock = threading.RLock()
        self._entries: dict[str, Packed] = {}  # path -> its entry (entries.py says why)
        self._overlays: dict[str, str] = {}  # path -> unsaved text
        self._counts: dict[str, int] = {}  # "<tokenizer>:<sha256>" -> tokens
        self._untagged: set[str] = set()  # changed before the first build's tags were in
        self.buffers = BufferQueue(self._apply_buffer, self.stopping)  # editors' buffers
        self.buffer_applied: BufferApplied = lambda rel, figures: None

    # -- building and keeping fresh ------------------------------------------------------

    def relative(self, path: str) -> str:
        """The posix path relative to the root of a client's `path` (relative to the root,
        absolute, or a file:// URI); InvalidParams when it leaves the root, lexically or
        through a symlink."""
        return self.tree.resolve_inside(path)

    def build(self, progress: Callable[[str], None] | None = None) -> None:
        """Walk the folder, then tag its source files (runs on a thread of its own). `ready`
        is set once the walk is done (figures can be asked for), `tags.ready` once the repo
        map's tags are in (the kernel: minutes), with what changed meanwhile re-tagged, and its
        graph's rows and solve made (a first map request waits for no warm-up);
        `tags.words_ready` once what the files say is counted too, after that."""
        try:
            self._build(progress)
        except Exception as exc:  # its maps would miss files or words: they are refused
            self.tags.failed = None if isinstance(exc, Stopping) else f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.tags.ready.set()  # a failed build must not leave map requests waiting
            self.tags.words_ready.set()

    def _build(self, progress: Callable[[str], None] | None) -> None:
        def tagged(done: int, total: int) -> None:
            if progress and walk.done:  # (the walk reports its own until it is done)
                progress(f"{len(walk.entries):,} files; symbols of {done:,} of {total:,} read")

        with walking(lambda found: self._walk(found, progress)) as walk:  # the tags start on
            self.tags.refresh_walked(walk, self.overlays(), tagged)  # its first files (issue 22)
        while not self.stopping.is_set():
            self.tags.warm()  # the graph's rows and solve: the first map request waits for none
            with self._lock:
                pending, self._untagged = self._untagged, set()
                if not pending:
                    self.tags.ready.set()
                    break
            self.tags.refresh_paths(pending, self.entries(), self.overlays())

        def counted(done: int, total: int) -> None:
            if progress:
                progress(f"{len(walk.entries):,} files; words of {done:,} of {total:,} counted")

        self.tags.count_words(counted)  # what files say: after the first map (issue 22)
        self.check_open()

    def _walk(self, walk: WalkStream, progress: Callable[[str], None] | None) -> None:
        """(A thread of the build.) The tree's files into `walk` as they are found; `ready`
        once all are (figures can be asked for)."""
        report = (lambda n: progress(f"{n:,} files")) if progress else None
        if fill(walk, self.tree.walk(max_bytes=self.max_bytes, progress=report), self.stopping):
            with self._lock:
                self._entries = walk.entries  # (the tags read it too: a watcher's edit is newer)
            self.ready.set()
            walk.finish()

    def close(self) -> None:
        """Stop the build and any batch being applied (they check `stopping` between files),
        and wake whoever waits for `ready` or `tags.ready`: they find `closed` and give up."""
        self.stopping.set()
        self.buffers.close()
        self.tags.close()
        self.ready.set()
        self.tags.ready.set()
        self.tags.words_ready.set()

    def forget(self) -> None:
        """Drop what the index holds (its entries, unsaved texts, counts), once it is closed
        and its threads have ended. The index sits in reference cycles with its threads'
        objects, so what it held waited for the collector's next full pass, which the daemon
        makes rare (daemon/process.py): after a 100,000-file workspace was released, 100,000
        FileEntry objects stayed (issue 17)."""
        with self._lock:
            self._entries, self._overlays, self._counts, self._untagged = {}, {}, {}, set()
        self.tags.forget()

    @property
    def closed(self) -> bool:
        return self.stopping.is_set()

    def check_open(self) -> None:
        """Raise Stopping once the index is closed (after a wait for `ready` or `tags.ready`)."""
        if self.stopping.is_set():
            raise Stopping(
                f"tokend is stopping (or {self.root.name} was closed): the request was not "
                "finished; send it again once tokend runs"
            )

    def _retag(self, paths: set[str]) -> None:
        """Re-tag `paths` now, or after the first build's tags when they are not in yet."""
        with self._lock:
            if not self.tags.ready.is_set():
                self._untagged.update(paths)
                return
        self.tags.refresh_paths(paths, self.entries(), self.overlays())

    def apply_changes(self, paths: Iterable[Path]) -> set[str]:
        """Re-read what a watcher batch touched (service.workspace.watch_batch); the workspace
        paths whose figures changed."""
        rels = batch_paths(self.tree, paths)
        known = self.entries()
        now = entries_now(self.tree, self.max_bytes, rels, Under(known), self.stopping)
        if now is None:
            return set()  # closed: nobody is told of figures any more
        changed: set[str] = set()
        with self._lock:
            for rel, entry in now.items():
                if entry is None:
                    if self._entries.pop(rel, None) is not None:
                        changed.add(rel)
                elif known.get(rel) != entry:
                    self._entries[rel] = pack(entry)
                    changed.add(rel)
        if changed:
            self._retag(changed)
        return changed

    def _apply_buffer(self, rel: str, text: str | None) -> None:
        """The buffers' thread: `rel`'s latest buffer applied, and its figures announced."""
        if self.set_overlay(rel, text):
            self.buffer_applied(rel, self.figures([rel], None, None))

    def set_overlay(self, rel: str, text: str | None) -> bool:
        """An editor's unsaved text for `rel` (None: the buffer is closed or saved), applied
        now (slow: re-tags; editors' events go through `buffers`). A buffer whose text is the
        file's on disk is no overlay. True when the figure changed."""
        if text is not None:
            disk = self.tree.read_file(rel, self.max_bytes)
            if disk.decoded is not None and disk.decoded.text == text:
                text = None
        with self._lock:
            before = self._overlays.get(rel)
            if text is None:
                self._overlays.pop(rel, None)
            else:
                self._overlays[rel] = text
        if before == text:
            return False
        self._retag({rel})
        return True

    # -- reads -----------------------------------------------------------------------------

    def entries(self) -> Entries:
        with self._lock:
            return Entries(dict(self._entries))

    def _overlay(self, rel: str) -> str | None:
        with self._lock:
            return self._overlays.get(rel)

    def overlays(self) -> dict[str, str]:
        with self._lock:
            return dict(self._overlays)

    def read(self, rel: str) -> FileText:
        """The text of `rel` as an agent would send it now (the unsaved buffer first)."""
        with self._lock:
            overlay = self._overlays.get(rel)
        if overlay is not None:
            return FileText(rel, overlay, sha256_text(overlay), True)
        read = self.tree.read_file(rel, self.max_bytes)
        if read.decoded is None:
            return FileText(rel, "", "", False, read.skipped or "not text")
        reason = INVALID_UTF8_REASON if read.decoded.replaced else None
        return FileText(rel, read.decoded.text, sha256_text(read.decoded.text), False, reason)

    def figures(
        self, paths: Sequence[str] | None, count: Count | None, tokenizer: str | None
    ) -> list[FileFigure]:
        """Figures of `paths` (every indexed file when None): exact with `count` when given
        (slow: call it off the event loop), else the fast estimate."""
        return list(self.each_figure(paths, count, tokenizer))

    def each_figure(
        self, paths: Sequence[str] | None, count: Count | None, tokenizer: str | None
    ) -> Iterator[FileFigure]:
        """`figures`, one at a time (a reply of 100,000 figures holds none of them at once)."""
        entries = self.entries()
        overlays = self.overlays()
        every = set(entries) | set(overlays)  # (sorted a piece at a time: tag_chunks.in_order)
        wanted = in_order(every) if paths is None else list(paths)
        for rel in wanted:
            entry, overlay = entries.get(rel), overlays.get(rel)
            if entry is None and overlay is None:
                entry = self.tree.file_entry(rel, self.max_bytes)
                if entry is None:
                    yield FileFigure(rel, 0, 0, "skipped", False, "no such file")
                    continue
            if count is None:
                yield self._estimated(rel, entry, overlay)
            else:
                yield self._counted(rel, count, tokenizer)

    def _estimated(self, rel: str, entry: FileEntry | None, overlay: str | None) -> FileFigure:
        if overlay is not None:
            size = len(overlay.encode("utf-8", "surrogatepass"))
            return FileFigure(
                rel, size, estimate_file_tokens(size, content_class_of(rel)), "estimate", True
            )
        assert entry is not None
        if entry.skipped:
            return FileFigure(rel, entry.size_bytes, 0, "skipped", False, entry.skipped)
        return FileFigure(rel, entry.size_bytes, entry.estimate_tokens, "estimate", False)

    def _counted(self, rel: str, count: Count, tokenizer: str | None) -> FileFigure:
        current = self.read(rel)
        size = len(current.text.encode("utf-8", "surrogatepass"))
        if not current.sha256:
            return FileFigure(rel, 0, 0, "skipped", False, current.reason)
        tokens = self.count_text(current, count, tokenizer)
        basis: Basis = "exact" if tokenizer else "estimate"
        return FileFigure(rel, size, tokens, basis, current.dirty, current.reason)

    def count_text(self, current: FileText, count: Count, tokenizer: str | None) -> int:
        """Tokens of a file's text, remembered by content hash for an exact `tokenizer`."""
        if tokenizer is None:
            return count(current.text)
        key = f"{tokenizer}:{current.sha256}"
        with self._lock:
            known = self._counts.get(key)
        if known is None:
            known = self.cache.counts([key]).get(key)
            if known is None:
                known = count(current.text)
                self.cache.put_counts({key: known})
            with self._lock:
                self._counts[key] = known
        return known
