"""BufferQueue: editors' unsaved buffers applied to a workspace index off the event loop.

A document notification only records the buffer's latest text (a dict write, on the loop);
the expensive part (comparing with the file on disk, re-tagging with tree-sitter, the
figures) runs on one thread per workspace, so one client's 8 MB buffer never holds another
client's request. The thread takes the documents in the order their first pending change
came, and each time only the latest text sent for that document: a burst of changes is
applied once, and an earlier text never overwrites a later one (a close after changes ends
with no overlay: the disk's figures). Readers call `settle(paths)` (off the loop) to wait for
what is pending on the documents they read: a request sees every change sent before it.

A text may be handed over as a callable that returns it (documents.py: a document whose edits
are applied when its text is taken): it is called on the thread, when the job runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait

log = logging.getLogger(__name__)

_UNSET = object()

Apply = Callable[[str, "str | None"], None]  # (path, latest text or None: no overlay)
Text = str | None | Callable[[], str]  # a text, no overlay, or how to get the latest text


class BufferQueue:
    def __init__(self, apply: Apply, stopping: threading.Event) -> None:
        self._apply = apply
        self._stopping = stopping
        self._lock = threading.Lock()
        self._latest: dict[str, Text] = {}  # path -> latest text, not yet taken
        self._pending: dict[str, Future[None]] = {}  # path -> the job that will apply it
        self._worker: ThreadPoolExecutor | None = None
        self._closed = False

    def put(self, rel: str, text: Text) -> None:
        """The latest text of `rel`'s buffer (None: closed or saved). Cheap: call it on the
        loop. A job already queued for `rel` takes this text; otherwise one is queued."""
        with self._lock:
            if self._closed or self._stopping.is_set():
                return
            queued = rel in self._latest
            self._latest[rel] = text
            if queued:
                return  # coalesced: the queued job has not taken its text yet
            if self._worker is None:
                self._worker = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="tokend-buffers"
                )
            try:
                job = self._worker.submit(self._run, rel)
            except RuntimeError:  # shut down meanwhile: the workspace is closing
                del self._latest[rel]
                return
            self._pending[rel] = job
        job.add_done_callback(lambda done: self._forget(rel, done))

    def _run(self, rel: str) -> None:
        with self._lock:
            text = self._latest.pop(rel, _UNSET)
        if text is _UNSET or self._closed or self._stopping.is_set():
            return
        try:
            if callable(text):
                text = text()
            self._apply(rel, text)  # type: ignore[arg-type]
        except Exception:
            log.exception("applying the unsaved buffer of %s failed", rel)

    def _forget(self, rel: str, done: Future[None]) -> None:
        with self._lock:
            if self._pending.get(rel) is done:
                del self._pending[rel]

    def busy(self, paths: Iterable[str] | None = None) -> bool:
        """True while a buffer of `paths` (any, when None) is still to be applied."""
        return bool(self.pending(paths))

    def pending(self, paths: Iterable[str] | None = None) -> list[Future[None]]:
        """The jobs that will apply the buffers of `paths` (all, when None) sent so far."""
        with self._lock:
            return self._jobs(paths)

    def settle(self, paths: Iterable[str] | None = None, timeout: float | None = None) -> None:
        """Wait until every buffer of `paths` (all, when None) sent so far is applied
        (blocks: call it off the loop)."""
        with self._lock:
            jobs = self._jobs(paths)
        if jobs:
            wait(jobs, timeout)

    def _jobs(self, paths: Iterable[str] | None) -> list[Future[None]]:
        if paths is None:
            return list(self._pending.values())
        return [job for rel in set(paths) if (job := self._pending.get(rel)) is not None]

    def close(self) -> None:
        """Drop what is queued; the job being run ends on its own (it checks `stopping`)."""
        with self._lock:
            worker, self._worker = self._worker, None
            self._closed = True
            self._latest.clear()
        if worker is not None:
            worker.shutdown(wait=False, cancel_futures=True)
