"""A connection's open documents: the text of each, with its edits applied beside the loop.

An editor sends `textDocument/didChange` for every keystroke, as incremental edits. On the event
loop a change is only recorded (`OpenDocument.change`: appended to the document's pending
edits); they are applied, in the order sent, by whoever next needs the text (`text()`): the
workspace's buffer thread (buffers.py, which takes the latest text of each document), or a
worker when many pile up unread (a document outside every workspace). The text is kept in
pieces (core.workspace.document_text), so that an edit costs its piece, not the whole buffer.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from tokend.core.workspace.document_text import DocumentText, Edit

FLUSH_AFTER = 256  # pending edits beyond which the text is brought up to date in a worker


class OpenDocument:
    """One open document: its text as of the edits applied, and the edits still pending."""

    def __init__(self, text: str, encoding: str) -> None:
        self._text: DocumentText | str = text  # pieces are made on the first edit
        self._encoding = encoding
        self._pending: list[Edit] = []
        self._pending_lock = threading.Lock()  # held for a list operation, never longer
        self._apply_lock = threading.Lock()  # held while edits are applied (beside the loop)

    def change(self, edits: Iterable[Edit]) -> int:
        """Record `edits` (cheap: on the loop); the number now pending."""
        with self._pending_lock:
            self._pending.extend(edits)
            return len(self._pending)

    def text(self) -> str:
        """The text with every edit recorded so far applied (call it beside the loop)."""
        with self._apply_lock:
            self._catch_up()
            return self._text if isinstance(self._text, str) else self._text.text()

    def flush(self) -> None:
        """Apply what is pending (a worker's job when nobody reads the text)."""
        with self._apply_lock:
            self._catch_up()

    def _catch_up(self) -> None:
        with self._pending_lock:
            edits, self._pending = self._pending, []
        whole = max((i for i, e in enumerate(edits) if e.start is None), default=-1)
        if whole >= 0:  # a whole-text change: what came before it no longer matters
            self._text, edits = edits[whole].text, edits[whole + 1 :]
        if edits:
            if isinstance(self._text, str):
                self._text = DocumentText(self._text, self._encoding)
            self._text.apply(edits)


class OpenDocuments:
    """The documents one connection has open, by URI."""

    def __init__(self) -> None:
        self._documents: dict[str, OpenDocument] = {}

    def open(self, uri: str, text: str, encoding: str) -> OpenDocument:
        document = OpenDocument(text, encoding)
        self._documents[uri] = document
        return document

    def get(self, uri: str) -> OpenDocument | None:
        return self._documents.get(uri)

    def close(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def uris(self) -> Iterator[str]:
        return iter(list(self._documents))
