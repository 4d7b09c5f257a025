"""What files say, counted after the first map (issue 22): the first build tags the tree without
the words of each file's text (core.repomap.text.count_words, a fifth of the tag workers' CPU on
the kernel), and the first map, which reads none, is made from the tags alone; then the words
are counted, a chunk at a time, and given to the graph as they come (RepoGraph.set_words).

A file whose words are not in is owed: parsed without them, or read from a cache that kept its
tags without them (a build stopped between the two passes). `ready` is set once nothing is owed
and nothing is being counted: a map that reads words (a text focus, a file focus) waits for it.
Words are counted from the file as it is now, and kept in the cache under their tags' key only
when its content is the content those tags were parsed from; a file re-tagged meanwhile (its
words counted with its tags) keeps those. A chunk is counted with the files' whole tokens or
without, as the tree's size says when the chunk is taken (core.repomap.whole.keeps_whole: the
kernel's are counted without), and kept under a key that says which (tree_ports.words_key); a
count without them that lands once the tree keeps them again is owed again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager
from itertools import islice

from tokend.core.repomap.name_words import Words
from tokend.core.repomap.packed import names_words
from tokend.service.workspace.tag_chunks import Beside, Reading, read_source
from tokend.service.workspace.tree_ports import TagParsing, TagPool, Work, words_key

Said = Mapping[int, int]  # a file's words by id (core.repomap.text.count_words)
Names = Mapping[str, Words]  # files' names' words (core.repomap.name_words)
CHUNK_FILES = 250  # files counted at once (their words come back as two arrays of 32-bit
# integers, core.repomap.words.SaidArrays; a landing holds two chunks':
# tests/workspace/test_repomap_word_pass_sources.py)
SOURCE_BYTES = 1 << 20  # ... or fewer, once they hold this much source (the tags' CHUNK_BYTES is 8
# MB): the pass holds the chunk being counted and the next one read, and their sources were most
# of what it held above the word table (issue 22: on the kernel's drivers/, about 16 MiB at each
# landing with chunks of 250 files, 8.5 with 1 MiB; the landings cost the same CPU in all)
Counting = Callable[[list[Work], bool], list[Said | None]]
Counted = Future[list[Said | None]]
RELEASE_LANDINGS = 16  # landings between two returns of the freed memory to the system (below)

log = logging.getLogger(__name__)


class OwedWords:
    """The files whose words are not counted yet (path -> their tags' cache key), under the
    lock of the graph's owner (service.workspace.tags.WorkspaceTags)."""

    def __init__(
        self,
        lock: threading.RLock,
        reading: Reading,
        overlay: Callable[[str], str | None],
        set_words: Callable[[Mapping[str, Said], int, Names], object],
        whole: Callable[[], bool] = lambda: True,
        release: Callable[[], object] = lambda: None,
    ) -> None:
        """`whole()`: whether the tree keeps its files' whole tokens now (their count too);
        `release()` gives the memory the process freed back to the system (TagParsing's)."""
        self._lock = lock
        self._whole = whole
        self._release = release
        self._reading = reading
        self._overlay = overlay
        self._set_words = set_words
        self._owed: dict[str, str] = {}  # path -> key, in the order owed (path order)
        self._taken: dict[str, str] = {}  # being counted: path -> key
        self.ready = threading.Event()  # set: no file's words are owed or being counted
        self.started = False  # the first build's count began: a re-tagging counts its own
        self._counting = False  # a count runs (one at a time: it counts what is owed meanwhile)

    def owe(self, unsaid: Mapping[str, str], tagged: Iterable[str]) -> None:
        """(Under the lock.) The files `tagged` were given tags: their words are in, but for
        those `unsaid` (path -> key), now owed."""
        for path in tagged:
            self._owed.pop(path, None)
            self._taken.pop(path, None)  # a count under way is not given to the graph
        self._owed.update(unsaid)
        if self._owed:
            self.ready.clear()

    def forget(self) -> None:
        """Nothing owed any more (the workspace was released)."""
        with self._lock:
            self._owed, self._taken = {}, {}
        self.ready.set()

    @property
    def owed(self) -> int:
        with self._lock:
            return len(self._owed)

    def count(
        self,
        tagging: TagParsing,
        pool: Callable[[int], AbstractContextManager[TagPool | None]],
        progress: Callable[[int, int], None] | None = None,
        check: Callable[[], None] = lambda: None,
    ) -> None:
        """Count every owed file's words (by the workers `pool(files)` gives, else in this
        thread) and give them to the graph a chunk at a time; `progress(done, total)` after
        each chunk; `check()` between chunks (it raises to stop)."""
        with self._lock:
            if self._counting:  # the count under way counts what is owed now too
                return
            self._counting = self.started = True
        try:
            self._count_all(tagging, pool, progress, check)  # (it ends `_counting` itself)
        except BaseException:
            with self._lock:
                self._counting = False
            raise

    def _count_all(
        self,
        tagging: TagParsing,
        pool: Callable[[int], AbstractContextManager[TagPool | None]],
        progress: Callable[[int, int], None] | None,
        check: Callable[[], None],
    ) -> None:
        total, done, landings, released_s = self.owed, 0, 0, 0.0
        with pool(total) as workers, Beside(workers is not None, 2) as beside:
            counting: Counting = workers.count_words if workers else tagging.count_words
            ahead: tuple[list[str], list[str], bool, dict[str, Words], Counted] | None = None
            while True:  # (`ahead`: the chunk being counted while the next one is read; its
                check()  # paths, not its sources: those go once counted, not once landed)
                taken, whole = self._take(), self._whole()
                work, keys = self._read(taken)
                paths = [path for path, _, _ in work]
                # the next chunk given to the pool before this one is waited for: its worker
                # goes on to it when done with this one (its batches wait for a free worker),
                # not once this one's answer reached this thread (issue 22: with one word
                # worker, the kernel's chunks of about 1 MiB each left it idle in between)
                now = beside(counting, work, whole) if taken else None
                del work
                names = self._names(paths, keys)  # (while the workers count)
                found = ahead[4].result() if ahead is not None else []
                if ahead is not None:
                    done += self._land(*ahead[:4], found)
                    landings += 1
                    if landings % RELEASE_LANDINGS == 0:  # (a save's few: none)
                        released_s += self._released()
                    if progress is not None:
                        progress(done, max(total, done))
                ahead = (paths, keys, whole, names, now) if now is not None else None
                if ahead is None:
                    with self._lock:
                        if not self._owed:  # (else owed meanwhile: counted too)
                            self.ready.set()
                            self._counting = False  # (with the check: nothing is left owed)
                            break
        if landings >= RELEASE_LANDINGS:  # (a first build's pass; not a save's)
            log.info("words of %d files counted in %d landings; the freed memory returned %d "
                     "times (%.0f ms)", done, landings, landings // RELEASE_LANDINGS,
                     released_s * 1000)  # fmt: skip

    def _released(self) -> float:
        """The memory the process freed given back to the system, every RELEASE_LANDINGS
        landings (the pool's end trims too): a chunk's temporaries and, above all, a map
        request's, freed below blocks allocated meanwhile, which glibc keeps resident until a
        trim (issue 22: the pass starts beside the first map's request; on the kernel 13-40 MiB
        of free heap stayed resident to the pass's end, where its word table is all in and
        the daemon peaks); the seconds it took."""
        started = time.perf_counter()
        self._release()
        return time.perf_counter() - started

    def _take(self) -> dict[str, str]:
        """The next CHUNK_FILES owed files (path -> key), now being counted."""
        with self._lock:
            taken = {}
            for path in list(islice(self._owed, CHUNK_FILES)):
                taken[path] = self._taken[path] = self._owed.pop(path)
            return taken

    def _read(self, taken: Mapping[str, str]) -> tuple[list[Work], list[str]]:
        """The sources of `taken` whose content is their tags' (the key's hash), with keys,
        read in path order through the folders they share (`WorkspaceFiles.reader`)."""
        on = self._reading
        with on.files.reader(on.root) as read:
            return self._read_through(taken, read)

    def _read_through(
        self, taken: Mapping[str, str], read: Callable[[str], bytes]
    ) -> tuple[list[Work], list[str]]:
        work, keys, held = [], [], 0
        for path, key in taken.items():
            if held > SOURCE_BYTES:  # enough for one chunk: the rest are owed again
                with self._lock:
                    if self._taken.get(path) == key:
                        self._owed[path] = self._taken.pop(path)
                continue
            overlay = self._overlay(path)
            source = read_source(self._reading, path, read) if overlay is None else None
            if overlay is not None:
                source = overlay.encode("utf-8", "surrogatepass")
            _version, language, sha = key.split(":", 2)
            if source is None or hashlib.sha256(source).hexdigest() != sha:
                with self._lock:  # changed since: its re-tagging counts its words
                    self._taken.pop(path, None)
                continue
            work.append((path, language, source))
            keys.append(key)
            held += len(source)
        return work, keys

    def _names(self, paths: list[str], keys: list[str]) -> dict[str, Words]:
        """The words of the names each file defines (core.repomap.name_words), from its tags
        the cache keeps under its key (a first build's tag workers left them out, issue 22)."""
        cached = self._reading.cache.tags(sorted(set(keys)))
        return {path: names_words([d[0] for d in cached[key].get("d", ())])
                for path, key in zip(paths, keys, strict=True) if key in cached}  # fmt: skip

    def _land(
        self,
        paths: list[str],
        keys: list[str],
        whole: bool,
        names: Mapping[str, Words],
        found: list[Said | None],
    ) -> int:
        """Counted words kept in the cache (under words_key, by `whole`) and given to the
        graph with the words of the names the files define (but for files re-tagged since,
        and, counted without their whole tokens, for all once the tree keeps them again: owed
        again); how many files were counted."""
        kept = {}
        for key, words in zip(keys, found, strict=True):
            if words is not None:  # (None: its worker died on it; counted again next time)
                text = json.dumps([list(words), list(words.values())], separators=(",", ":"))
                kept[words_key(key, whole)] = text
        if kept:
            self._reading.cache.put_word_texts(kept)
        with self._lock:
            spoken, again = {}, not whole and self._whole()
            for path, key, words in zip(paths, keys, found, strict=True):
                if self._taken.get(path) == key:
                    del self._taken[path]
                    if again:
                        self._owed[path] = key
                        continue
                    spoken[path] = words or {}
            if spoken:  # (and how many files' words are still to come)
                named = {path: names[path] for path in spoken if path in names}
                self._set_words(spoken, len(self._owed) + len(self._taken), named)
        return len(paths)
