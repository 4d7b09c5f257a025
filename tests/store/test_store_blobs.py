"""Long tool outputs stored in chunks, on a real SQLite file and a real PostgreSQL database.

The oracle is the file each test writes: what is read back, in slices or whole, is compared
with its characters, and the chunks in the database with its length."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import text as sql
from sqlalchemy.orm import Session

from tokend.adapters.store import SqlStore, blobs
from tokend.core.commit import SessionCommit
from tokend.core.text_chunks import STORE_PIECE_CHARS, KeptText
from tokend.core.types import ToolResultPart

from .conftest import message, session_info

PIECE = 300_000  # the file is read back this much at a time, as the daemon's spool is


class FileText(KeptText):
    """A text kept in a file, read in pieces: what the daemon hands the store for a big tool
    output (its SpooledText), here over a plain UTF-8 file. Records the largest piece read."""

    path: Path
    largest_piece: int

    @classmethod
    def of(cls, path: Path) -> FileText:
        whole = path.read_text(encoding="utf-8")
        text = cls("[kept in a file]")
        text.path, text.chars, text.largest_piece = path, len(whole), 0
        text.ref = "sha256:" + hashlib.sha256(whole.encode()).hexdigest()
        return text

    def pieces(self) -> Iterator[str]:
        with self.path.open(encoding="utf-8", newline="") as source:
            while piece := source.read(PIECE):
                self.largest_piece = max(self.largest_piece, len(piece))
                yield piece


def write_text(path: Path, chars: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["error", "ünïcode", "日志", "\U0001f600", "line\n", "\t", '"quoted"', "\\"]
    text = "".join(rng.choice(words) for _ in range(chars // 3))[:chars]
    path.write_text(text, encoding="utf-8", newline="")
    return text


def chunk_rows(store: SqlStore, ref: str) -> list[tuple[int, int, int]]:
    with store.engine.connect() as db:
        found = db.execute(
            sql("SELECT seq, start, chars FROM blob_chunks WHERE ref = :ref ORDER BY seq"),
            {"ref": ref},
        )
        return [(int(a), int(b), int(c)) for a, b, c in found]


def test_a_kept_text_goes_to_the_store_in_chunks_and_comes_back_in_slices(
    store: SqlStore, tmp_path: Path
) -> None:
    original = write_text(tmp_path / "out.txt", 3 * STORE_PIECE_CHARS + 12_345, seed=1)
    kept = FileText.of(tmp_path / "out.txt")
    store.create_session(session_info("s1"))
    store.commit_change("s1", SessionCommit(message=message("s1"), tool_outputs={kept.ref: kept}))

    assert kept.largest_piece == PIECE  # read in pieces, never whole
    rows = chunk_rows(store, kept.ref)
    assert len(rows) >= 3 and sum(chars for _, _, chars in rows) == len(original)
    assert all(chars <= STORE_PIECE_CHARS for _, _, chars in rows)
    assert [start for _, start, _ in rows] == [
        sum(c for _, _, c in rows[:i]) for i in range(len(rows))
    ]
    for offset, length in [(0, 7), (PIECE - 3, 9), (STORE_PIECE_CHARS - 1, 2 * STORE_PIECE_CHARS)]:
        got = store.messages.read_tool_output("s1", kept.ref, offset, length)
        assert got == (original[offset : offset + length], len(original))
    end = store.messages.read_tool_output("s1", kept.ref, len(original) - 4, 100)
    assert end == (original[-4:], len(original))
    assert store.messages.read_tool_output("s1", kept.ref, len(original) + 1, 10) == (
        "",
        len(original),
    )
    with Session(store.engine) as session:
        assert "".join(blobs.iter_blob(session, kept.ref)) == original


def test_a_long_plain_output_is_chunked_and_a_short_one_stays_inline(
    store: SqlStore, tmp_path: Path
) -> None:
    long_text = write_text(tmp_path / "long.txt", STORE_PIECE_CHARS + 10, seed=2)
    short_text = "short output " * 100
    store.create_session(session_info("s1"))
    outputs = {"sha256:long": long_text, "sha256:short": short_text}
    store.commit_change("s1", SessionCommit(message=message("s1"), tool_outputs=outputs))
    assert len(chunk_rows(store, "sha256:long")) == 2 and chunk_rows(store, "sha256:short") == []
    with store.engine.connect() as db:
        inline = dict(db.execute(sql("SELECT ref, text FROM tool_outputs")).all())
    assert inline == {"sha256:long": "", "sha256:short": short_text}
    got = store.messages.read_tool_output("s1", "sha256:long", STORE_PIECE_CHARS - 5, 20)
    assert got == (long_text[STORE_PIECE_CHARS - 5 :], len(long_text))


def test_the_same_text_is_stored_once_and_a_fork_reads_it(store: SqlStore, tmp_path: Path) -> None:
    original = write_text(tmp_path / "out.txt", STORE_PIECE_CHARS + 99, seed=3)
    kept = FileText.of(tmp_path / "out.txt")
    store.create_session(session_info("s1"))
    store.create_session(session_info("s2"))
    gated = ToolResultPart("c1", "Bash", "(a preview)", gate="preview", ref=kept.ref)
    store.commit_change(
        "s1", SessionCommit(message=message("s1", gated), tool_outputs={kept.ref: kept})
    )
    store.commit_change(
        "s2", SessionCommit(message=message("s2", gated), tool_outputs={kept.ref: kept})
    )
    pieces = -(-len(original) // PIECE)
    assert len(chunk_rows(store, kept.ref)) == pieces  # content-addressed: once for both
    assert store.messages.read_tool_output("s2", kept.ref, 5, 10) == (original[5:15], len(original))
    store.fork_session(session_info("child", parent_id="s1"))
    assert store.messages.read_tool_output("child", kept.ref, 0, 10) == (
        original[:10],
        len(original),
    )
