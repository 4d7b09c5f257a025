"""Tags parsed in worker processes: tree-sitter holds the interpreter while it parses, so a
thread parses on one core however many the machine has, and every parse step is a step the
event loop waits for. A TagWorkers is a few child processes (one per core), each a fresh small
interpreter (`python -m tokend.adapters.tag_workers`: the parser and the grammars, nothing of
the daemon) reading work from its stdin and writing tags to its stdout.

- Work goes out in batches of files (`BATCH_FILES`, at most `BATCH_BYTES` but for one file;
  smaller toward the end of the work, so the workers finish together), two held by a worker at
  once (tag_proc.AHEAD); a batch's answers come back in one frame (issue 22: a frame a file
  cost the daemon's reader 47 µs a file), so a worker that dies (a grammar that crashes on a
  file, the OOM killer) is replaced and its batch goes again a file at a time: a file that
  ends a worker alone gets no tags and an error (logged). A word worker answers a file at a
  time (adapters.word_workers).
- Workers end with the daemon: their stdin is the daemon's pipe, and the daemon gone (even by
  kill -9) they read end-of-file and exit; a thread in each watches the parent's pid too.
- Two parses may run at once (a build's next chunk beside the one before): each takes the
  workers that are free, and frees each once it holds no batch of its work and none is left.
- Starting workers costs a few hundred milliseconds: callers keep a pool only for a refresh of
  POOL_MIN_FILES files or more (the first build).
- Each file's tags come back twice over: as the JSON text the workspace cache keeps, and packed
  for the graph (`Parsed`: its PackedTags and what else the graph reads, its imports, words and
  error), so the daemon's thread neither decodes the text nor computes a key per name (issue 22:
  the kernel's first map waited on that thread, a third of it in PackedTags.of).
- A file's work says what to make (`TAGS`, `WORDS`, `BOTH`): the first build asks for the tags
  alone (not the names' words: core.repomap.name_words), and for the words of the text once its
  first map is made (issue 22: a fifth of the workers' CPU, and that map reads none).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import threading
from collections.abc import Mapping, Sequence
from selectors import DefaultSelector
from typing import Any

from tokend.adapters.tag_proc import AHEAD, WORKER_RSS_BYTES
from tokend.adapters.tag_proc import Parse as _Parse
from tokend.adapters.tag_proc import Work as Work  # (path: for the log, language, source)
from tokend.adapters.tag_proc import WorkerProcess as _Worker
from tokend.adapters.tag_wire import BATCH_FILES as BATCH_FILES
from tokend.adapters.tag_wire import Parsed, batches, parsed, recv, send, unpacked, wire_fields
from tokend.adapters.tags import TagParser
from tokend.adapters.worker_pipe import rss_bytes as _rss_bytes
from tokend.adapters.worker_pipe import watch_parent as _watch_parent
from tokend.core.errors import Stopping
from tokend.core.repomap.tags import WORKER_DIED, FileTags
from tokend.core.repomap.text import count_words
from tokend.core.repomap.words import SaidArrays

log = logging.getLogger(__name__)

POOL_MIN_FILES = 200  # files to parse: fewer are parsed in the calling thread (no pool start)
STOP_POLL_S = 0.2
# Workers run this much nicer than the daemon: on a machine whose cores they fill (the kernel's
# first map: two workers on two cores), the daemon's threads, which answer every connection and
# hand the workers their next files, are given the CPU first (issue 22).
WORKER_NICE = 10
PROGRAM = "tokend.adapters.tag_workers"
TAGS, WORDS, BOTH = 1, 2, 3  # what a worker makes of a file: its tags, its words, or both


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


class TagWorkers:
    """A pool of tag worker processes (started on first use; `close` ends them)."""

    def __init__(
        self,
        workers: int | None = None,
        rss_limit: int = WORKER_RSS_BYTES,
        stopping: threading.Event | None = None,
        program: str = PROGRAM,
    ) -> None:
        """`stopping` set: a parse under way gives up (Stopping) within STOP_POLL_S. `program`:
        the workers' module (adapters.word_workers: words alone, without tree-sitter)."""
        self.size = workers or default_workers()
        self.program = program
        self.stopping = stopping or threading.Event()
        self.rss_limit = rss_limit
        self._workers: list[_Worker] = []
        self._idle: list[_Worker] = []  # not held by a parse
        self._parses: list[_Parse] = []  # under way (woken when a worker is freed)
        self._free = threading.Lock()  # guards the three lists
        self._running = False  # the workers were started (again after `close`)
        self.crashes = 0
        self.started = 0  # workers started in place of one that crashed or retired

    def __enter__(self) -> TagWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers]

    def close(self, kill: bool = False) -> None:
        with self._free:
            workers, self._workers, self._idle = self._workers, [], []
            self._running = False
        for worker in workers:
            worker.stop(kill)

    def parse(self, work: Sequence[Work]) -> list[FileTags]:
        """The tags of each (path, language, source), in order, parsed by the workers."""
        return [FileTags.from_json(json.loads(text)) for text in self.parse_json(work)]

    def parse_json(self, work: Sequence[Work]) -> list[str]:
        """`parse`, as JSON text written by the worker (the calling thread moves bytes)."""
        return [text for text, _, _ in self.parse_packed(work)]

    def parse_packed(self, work: Sequence[Work], words: bool = True) -> list[Parsed]:
        """Each file's tags as JSON text and packed, by the workers (the calling thread moves
        bytes): the tags but for their definitions and references, which the packing holds;
        without `words`, no words (FileTags.words empty, none in the text)."""
        found = self._run(work, BOTH if words else TAGS)
        return [r if r is not None else parsed(FileTags(error="not parsed")) for r in found]

    def count_words(
        self, work: Sequence[Work], whole: bool = True
    ) -> list[Mapping[int, int] | None]:
        """Each file's words (with their whole tokens, but without `whole`: the batches say
        which), counted by the workers (None: its worker died on it): as a dictionary from a
        tag worker, as SaidArrays from a word worker (which sends the ids' and counts' bytes:
        adapters.word_workers)."""
        found = self._run(work, WORDS, whole)
        return [SaidArrays(*w) if isinstance(w, tuple) else w for w in found]

    def _run(self, work: Sequence[Work], what: int, whole: bool = True) -> list[Any]:
        """Each file's answer (`what` says which) in order; None for a file never answered.
        Two parses may run at once, each in a thread of its own (a build's next chunk beside
        the one before): a parse takes the workers that are free and frees each once no batch
        of its work is left for it, so the next chunk's batches go out while this one's last
        files are parsed (issue 22: at the end of each of the kernel's 177 chunks, one worker
        waited for the other's last files)."""
        results: list[Any] = [None] * len(work)
        pending = batches(work, self.size)
        pending.reverse()  # popped from the end: first batch first
        run = _Parse(work, what, results, pending, DefaultSelector(), whole)
        with self._free:
            self._parses.append(run)
        try:
            while pending or run.held:
                self._check_stopping()
                if pending:  # the free workers (freed by another parse: it wakes this one)
                    for worker in self._take():
                        run.hold(worker)
                        self._next_batch(run, worker)
                try:
                    ready = run.selector.select(STOP_POLL_S)
                except (OSError, ValueError):  # its workers ended by the other parse's stop
                    self._check_stopping()
                    raise
                for key, _ in ready:
                    self._answer(run, key.data) if key.data is not None else run.woken()
        finally:
            with self._free:
                self._parses.remove(run)
            run.close()
        return results

    def _answer(self, run: _Parse, worker: _Worker) -> None:
        """A worker's next answer taken in, and the worker given its next batch or freed."""
        try:
            got = recv(worker.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            self._check_stopping()  # (killed by a stop: not a crash)
            run.drop(worker)
            replacement = self._crashed(worker, run.work, run.results, run.pending, run.what)
            run.hold(replacement)
            self._next_batch(run, replacement)
            return
        answers, retiring = (got[0], got[1]) if len(got) == 2 else ([got[:3]], got[3])
        for index, raw, packed in answers:
            run.results[index] = packed if run.what == WORDS else (raw, *unpacked(packed))
            worker.batch.remove(index)
            if index == worker.ends[0]:  # (a worker answers its batches' files in order)
                del worker.ends[0]
        if retiring:  # its last answer: a fresh worker takes its place, and what was sent
            if worker.batch:  # ahead of it goes back to the queue, next
                run.pending.append(worker.batch)
            run.drop(worker)
            worker = self._replace(worker)
            run.hold(worker)
        if len(worker.ends) < AHEAD:
            self._next_batch(run, worker)

    def _next_batch(self, run: _Parse, worker: _Worker) -> None:
        """`worker` sent the parse's next batches, up to AHEAD held; freed for another parse
        when it holds none and none is left."""
        if not worker.top_up(run.pending, run.work, run.what, run.whole):
            run.drop(worker)
            with self._free:
                self._idle.append(worker)
                for other in self._parses:  # (one waiting in its select takes it at once)
                    if other is not run:
                        other.wake()

    def _take(self) -> list[_Worker]:
        """The free workers (started on first use)."""
        with self._free:
            while len(self._workers) < self.size and not self._running:
                worker = _Worker(self.rss_limit, self.program)
                self._workers.append(worker)
                self._idle.append(worker)
            self._running = True
            taken, self._idle = self._idle, []
            return taken

    def _check_stopping(self) -> None:
        if self.stopping.is_set():
            self.close(kill=True)  # their batches are not worth finishing
            raise Stopping("tokend is stopping: the repo map's tags were not finished")

    def _crashed(
        self,
        worker: _Worker,
        work: Sequence[Work],
        results: list[Any],
        pending: list[list[int]],
        what: int,
    ) -> _Worker:
        """A worker died on the first file of its batch not answered: that file gets an
        error (no words: None), the rest of the batch goes back in the queue, and a new worker
        takes its place. A tag worker answers a batch at once, so which of its files it died
        on is not known: the batch goes back a file a batch (a file that ends a worker ends a
        second one, alone in its batch, and is then known). It died in the first batch it
        held: one sent ahead (AHEAD) was never read, and goes back as it was."""
        self.crashes += 1
        worker.stop()
        code = worker.proc.returncode
        held = worker.batch
        if self.program == PROGRAM:
            held = worker.first()
            if len(held) < len(worker.batch):
                pending.append(worker.batch[len(held) :])  # (popped after the first's files)
        if len(held) > 1 and self.program == PROGRAM:
            pending.extend([index] for index in reversed(held))  # (first popped first)
            log.info("a tag worker died (exit %s): its batch goes again a file at a time", code)
        elif held:
            culprit, rest = held[0], held[1:]
            path, language = work[culprit][:2]
            died = FileTags(error=f"{WORKER_DIED} (exit {code}; {language})")
            results[culprit] = None if what == WORDS else parsed(died)
            log.warning("a tag worker died (exit %s) on %s: it has no tags", code, path)
            if rest:
                pending.append(rest)
        return self._replace(worker)

    def _replace(self, worker: _Worker) -> _Worker:
        worker.stop()
        replacement = _Worker(self.rss_limit, self.program)
        with self._free:
            if worker not in self._workers:  # closed meanwhile (a stop): no more parsing
                replacement.stop(kill=True)
                raise Stopping("tokend is stopping: the repo map's tags were not finished")
            self._workers[self._workers.index(worker)] = replacement
            self.started += 1
        return replacement


# -- the worker process --------------------------------------------------------------------------


def main() -> None:
    rss_limit = int(sys.argv[1]) if len(sys.argv) > 1 else WORKER_RSS_BYTES
    try:
        os.nice(WORKER_NICE)
    except OSError:  # not allowed here: the worker parses at the daemon's priority
        pass
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    parser = TagParser(alone=True)  # nothing else runs here: no callbacks in the parse
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            batch = recv(stdin)
        except EOFError:
            return
        answers: list[tuple[int, str, Any]] = []
        for index, language, source, *what in batch:  # (what, whole; none: BOTH, as before)
            if what and what[0] == WORDS:
                answers.append((index, "", count_words(source, what[1:] != [False])))
            else:
                words = not what or what[0] != TAGS
                answers.append((index, *wire_fields(parser.raw(language, source, words), words)))
        retiring = _rss_bytes() > rss_limit
        send(stdout, (answers, retiring))  # the batch's answers in one frame
        if retiring:
            return


if __name__ == "__main__":
    main()
