"""Long texts in chunks: written and read with bounded memory, on SQLite and PostgreSQL.

A text over INLINE_MAX_CHARS (or kept out of memory by the daemon: core.text_chunks.KeptText) is
stored as rows of `blob_chunks`, one per piece of about a million characters, under its
content address (`ref`, "sha256:<hex>" of its UTF-8 bytes): the same text is stored once,
whoever refers to it. Each chunk knows the character offset it starts at, so a slice reads
only the chunks it overlaps. One INSERT per chunk: no statement ever carries the whole text.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from tokend.adapters.store.dialect import insert_for
from tokend.adapters.store.models import BlobChunkRow, table_of
from tokend.core.text_chunks import STORE_PIECE_CHARS, KeptText, text_length, text_pieces

INLINE_MAX_CHARS = STORE_PIECE_CHARS  # a shorter plain text stays in its own row

_chunks = table_of(BlobChunkRow)


def kept_in_chunks(text: str) -> bool:
    """Whether `text` is stored here rather than inline beside what refers to it."""
    return isinstance(text, KeptText) or len(text) > INLINE_MAX_CHARS


def has_blob(session: Session, ref: str) -> bool:
    found = session.execute(
        select(_chunks.c.seq).where(_chunks.c.ref == ref, _chunks.c.seq == 0)
    ).first()
    return found is not None


def put_blob(session: Session, ref: str, text: str) -> int:
    """Store `text` under `ref` in chunks, in the caller's transaction, unless it is there
    already; returns its length in characters. A KeptText is read piece by piece."""
    if has_blob(session, ref):
        return text_length(text)
    # ON CONFLICT DO NOTHING: another daemon sharing the database may store the same text (the
    # same ref, the same chunks) at the same moment; PostgreSQL makes this insert wait for its
    # transaction, then skips what it wrote.
    new_chunk = insert_for(session, _chunks).on_conflict_do_nothing()
    start = 0
    for seq, piece in enumerate(text_pieces(text)):
        session.execute(
            new_chunk,
            {"ref": ref, "seq": seq, "start": start, "chars": len(piece), "text": piece},
        )
        start += len(piece)
    if start == 0:  # an empty text: one empty chunk, so that the blob exists
        session.execute(new_chunk, {"ref": ref, "seq": 0, "start": 0, "chars": 0, "text": ""})
    return start


def read_slice(session: Session, ref: str, offset: int, length: int) -> str:
    """Characters [offset, offset + length) of the blob `ref` (shorter at its end; "" past
    it), reading only the chunks that overlap them."""
    if length <= 0:
        return ""
    end = offset + length
    found = session.execute(
        select(_chunks.c.start, _chunks.c.text)
        .where(
            _chunks.c.ref == ref,
            _chunks.c.start < end,
            _chunks.c.start + _chunks.c.chars > offset,
        )
        .order_by(_chunks.c.seq)
    ).all()
    return "".join(text[max(0, offset - start) : end - start] for start, text in found)


def iter_blob(session: Session, ref: str) -> Iterator[str]:
    """The blob's chunks in order, one row in memory at a time."""
    last = -1
    while True:
        row = session.execute(
            select(_chunks.c.seq, _chunks.c.text)
            .where(_chunks.c.ref == ref, _chunks.c.seq > last)
            .order_by(_chunks.c.seq)
            .limit(1)
        ).first()
        if row is None:
            return
        last = row[0]
        yield row[1]
