"""Outbox: the writer pygls writes to for one connection.

pygls calls `write(frame)` synchronously with one whole LSP frame (headers + body). The
outbox queues it and a task drains the queue into the socket, so a slow reader never blocks
the event loop or any other connection. Memory per connection is bounded:

- above `soft_limit_bytes` queued, the OLDEST queued notifications of droppable methods
  (gauge updates such as `budget/didChange`, where only the newest matters) are dropped;
  responses and other messages are never dropped;
- with more than `hard_limit_bytes` of undroppable frames already queued, the client is not
  reading at all: the connection is aborted (the editor's forwarder exits and restarts);
- one frame over `hard_limit_bytes` is never queued: a reply is replaced by a ReplyTooLarge
  error for its id (the connection stays), anything else is dropped and logged.

The connection's reader waits while the queue is long (Connection.ready_to_read): a client that
does not read its replies stops being read; progress callbacks tell it when the queue moved.

At most about `transport_high_water_bytes` sit in the socket transport's own buffer; the rest
waits in the queue, where it can still be dropped. A big frame goes to the transport a slice
(WRITE_SLICE_BYTES) at a time. A frame still being encoded beside the loop (a big reply:
lsp/encode.py) takes its place in the queue at once (`write_later`): what is written after it
waits for it, so a connection's messages go out in the order they were written.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
from collections.abc import Callable, Iterable

from tokend.core.errors import ReplyTooLarge
from tokend.daemon.jsonscan import top_level_fields

log = logging.getLogger(__name__)

DROPPABLE_METHODS: frozenset[str] = frozenset({"budget/didChange"})
WRITE_SLICE_BYTES = 256 << 10  # a bigger frame goes to the transport in slices this long

Pending = asyncio.Future[bytes | None]
"""A frame being encoded (None: nothing is to be sent after all)."""


class Outbox:
    """Bounded, non-blocking, per-connection frame queue drained into a StreamWriter."""

    def __init__(
        self,
        stream_writer: asyncio.StreamWriter,
        *,
        droppable_methods: Iterable[str] = DROPPABLE_METHODS,
        soft_limit_bytes: int = 1 << 20,
        hard_limit_bytes: int = 32 << 20,
        transport_high_water_bytes: int = 64 << 10,
        name: str = "",
    ) -> None:
        self._writer = stream_writer
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._droppable_methods = frozenset(droppable_methods)
        self._needles = tuple(_method_needles(self._droppable_methods))
        self.soft_limit_bytes = soft_limit_bytes
        self.hard_limit_bytes = hard_limit_bytes
        self._high_water = transport_high_water_bytes
        # The transport pauses us (drain() waits) only above its high-water mark: keep ours equal.
        stream_writer.transport.set_write_buffer_limits(high=transport_high_water_bytes)
        self._name = name
        self._queue: collections.deque[tuple[bytes | Pending, bool]] = collections.deque()
        self.queued_bytes = 0
        self._droppable_queued = 0
        self.dropped_frames = 0
        self._closing = False
        self._wakeup = asyncio.Event()
        self._on_closed: list[Callable[[], None]] = []
        self._on_progress: list[Callable[[], None]] = []
        self._task = self._loop.create_task(self._drain(), name=f"outbox {name}")

    # -- the pygls writer interface --------------------------------------------------------

    def write(self, frame: bytes) -> None:
        """Queue one frame; never blocks. Safe to call from pygls's worker threads."""
        if len(frame) > self.hard_limit_bytes:
            replacement = self._too_large(frame)
            if replacement is None:
                return
            frame = replacement
        if threading.get_ident() == self._loop_thread:
            self._enqueue(frame)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._enqueue, frame)

    def write_later(self, pending: Pending) -> None:
        """Queue a frame still being encoded (on the loop): frames written later go after it."""
        if self._closing:
            return
        self._queue.append((pending, False))
        self._wakeup.set()

    def close(self) -> None:
        """Send what is queued, then close the socket (pygls calls this on `exit`)."""
        self._closing = True
        self._wakeup.set()

    # -- for the daemon ----------------------------------------------------------------------

    @property
    def closing(self) -> bool:
        """True once close() or abort() was called or the peer went away."""
        return self._closing

    @property
    def closed(self) -> bool:
        return self._task.done()

    def abort(self) -> None:
        """Drop everything queued and cut the connection now."""
        self._closing = True
        self._discard_queue()
        self._writer.transport.abort()
        self._wakeup.set()

    async def wait_closed(self) -> None:
        await asyncio.wait({self._task})

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        self._on_closed.append(callback)

    def add_progress_callback(self, callback: Callable[[], None]) -> None:
        """Run `callback` (on the loop) each time queued frames went out, and at the close."""
        self._on_progress.append(callback)

    def forget_callbacks(self) -> None:  # once closed: they have run
        self._on_closed.clear()
        self._on_progress.clear()

    # -- internals -----------------------------------------------------------------------

    def _enqueue(self, frame: bytes) -> None:
        if self._closing:
            log.debug("outbox %s closed: dropped a %d-byte frame", self._name, len(frame))
            return
        droppable = self._is_droppable(frame)
        if self.queued_bytes + len(frame) > self.soft_limit_bytes:
            self._make_room(len(frame))
        if self.queued_bytes > self.hard_limit_bytes:
            log.warning(
                "connection %s: client has not read %d bytes of replies; disconnecting it",
                self._name,
                self.queued_bytes,
            )
            self.abort()
            return
        self._queue.append((frame, droppable))
        self.queued_bytes += len(frame)
        self._droppable_queued += droppable
        self._wakeup.set()

    def _too_large(self, frame: bytes) -> bytes | None:
        """A ReplyTooLarge error in place of an oversized reply; None for anything else."""
        _, _, body = frame.partition(b"\r\n\r\n")
        fields = top_level_fields(body)
        if fields.msg_id is None or not fields.is_response:
            log.warning(
                "connection %s: dropped a %d-byte message (over the %d-byte limit)",
                self._name,
                len(frame),
                self.hard_limit_bytes,
            )
            return None
        log.warning(
            "connection %s: a %d-byte reply is over the %d-byte limit; sent ReplyTooLarge",
            self._name,
            len(frame),
            self.hard_limit_bytes,
        )
        error = ReplyTooLarge(
            f"the reply is {len(body):,} bytes, over the {self.hard_limit_bytes >> 20} MiB one "
            "reply may take; ask for less at a time",
            {"bytes": len(body), "limit": self.hard_limit_bytes},
        )
        reply = {
            "jsonrpc": "2.0",
            "id": fields.msg_id,
            "error": {"code": error.code, "message": error.message, "data": error.data},
        }
        encoded = json.dumps(reply).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(encoded), encoded)

    def _is_droppable(self, frame: bytes) -> bool:
        """A notification of a droppable method; a body that starts with its "id" (a reply, of
        megabytes for a context/assemble) is not one, neither searched nor parsed."""
        body_at = frame.find(b"\r\n\r\n", 0, 256) + 4  # the header: its first bytes
        if body_at >= 4 and frame.startswith(b'{"id"', body_at):
            return False
        if not any(needle in frame for needle in self._needles):
            return False
        _, _, body = frame.partition(b"\r\n\r\n")
        try:
            message = json.loads(body)
        except ValueError:
            return False
        return (
            isinstance(message, dict)
            and "id" not in message
            and message.get("method") in self._droppable_methods
        )

    def _make_room(self, incoming_bytes: int) -> None:
        """Drop the oldest droppable frames until the queue is at 3/4 of the soft limit.

        Freeing more than one frame's worth means the queue is rescanned rarely, not per write.
        """
        if not self._droppable_queued:
            return
        target = self.soft_limit_bytes * 3 // 4 - incoming_bytes
        kept: collections.deque[tuple[bytes | Pending, bool]] = collections.deque()
        for frame, droppable in self._queue:
            if droppable and self.queued_bytes > target and isinstance(frame, bytes):
                self.queued_bytes -= len(frame)
                self._droppable_queued -= 1
                self.dropped_frames += 1
            else:
                kept.append((frame, droppable))
        self._queue = kept

    def _discard_queue(self) -> None:
        self._queue.clear()
        self.queued_bytes = 0
        self._droppable_queued = 0

    async def _drain(self) -> None:
        transport = self._writer.transport
        try:
            while True:
                if not self._queue:
                    if self._closing:
                        break
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                while self._queue and transport.get_write_buffer_size() <= self._high_water:
                    frame = await self._next_frame()
                    if frame is None:
                        continue
                    await self._send(frame)
                    del frame  # not kept alive while the queue waits (a reply may be 30 MB)
                self._progressed()
                await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            log.debug("outbox %s: peer went away: %s", self._name, exc)
        finally:
            self._closing = True
            self._discard_queue()
            transport.close()
            self._progressed()
            for callback in self._on_closed:
                callback()

    async def _next_frame(self) -> bytes | None:
        """The first queued frame, taken off the queue (waited for if being encoded), or None."""
        head, droppable = self._queue[0]
        if isinstance(head, bytes):
            self._queue.popleft()
            self.queued_bytes -= len(head)
            self._droppable_queued -= droppable
            return head
        await asyncio.wait({head})
        if not self._queue or self._queue[0][0] is not head:
            return None  # dropped meanwhile (abort)
        self._queue.popleft()
        if head.cancelled() or head.exception() is not None:
            log.error("connection %s: a message could not be encoded", self._name)
            return None
        frame = head.result()
        if frame is not None and len(frame) > self.hard_limit_bytes:
            frame = self._too_large(frame)
        return frame

    async def _send(self, frame: bytes) -> None:
        """One frame to the transport; a big one a slice at a time, waiting for each to go."""
        if len(frame) <= WRITE_SLICE_BYTES:
            self._writer.write(frame)
            return
        view = memoryview(frame)
        for start in range(0, len(frame), WRITE_SLICE_BYTES):
            self._writer.write(view[start : start + WRITE_SLICE_BYTES])
            await self._writer.drain()

    def _progressed(self) -> None:
        for callback in self._on_progress:
            callback()


def _method_needles(methods: Iterable[str]) -> Iterable[bytes]:
    for method in methods:
        # json.dumps writes `"method": "x"`; other writers may omit the space.
        yield f'"method": "{method}"'.encode()
        yield f'"method":"{method}"'.encode()
