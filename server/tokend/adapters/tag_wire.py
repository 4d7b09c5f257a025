"""What travels between the daemon and a tag worker (adapters.tag_workers): length-prefixed
pickles on the worker's stdin and stdout; a file's tags as the JSON text the workspace cache
keeps, and packed for the graph beside it (`Parsed`)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
import orjson

from tokend.adapters.tags.parser import Raw
from tokend.adapters.worker_pipe import HEADER
from tokend.adapters.worker_pipe import send as send  # the frames both sides write
from tokend.core.repomap.packed import KEY, PackedTags
from tokend.core.repomap.tags import FileTags, json_fields

BATCH_FILES = 16  # a batch sent to a worker: at most this many files ...
BATCH_BYTES = 1 << 20  # ... and bytes, but for one file
Parsed = tuple[str, FileTags, PackedTags]  # the JSON text, the tags but for their names, packed


def read_exact(stream: IO[bytes], size: int) -> bytes:
    """`size` bytes from an unbuffered stream (a buffered one hides bytes from the selector)."""
    pieces, left = [], size
    while left:
        piece = stream.read(left)
        if not piece:
            raise EOFError("the stream ended")
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def recv(stream: IO[bytes]) -> Any:
    (size,) = HEADER.unpack(read_exact(stream, HEADER.size))
    return pickle.loads(read_exact(stream, size))


def tags_json(tags: FileTags) -> str:  # as the workspace cache keeps them
    return json.dumps(tags.to_json(), separators=(",", ":"))


def parsed(tags: FileTags) -> Parsed:
    """What a worker gives for a file's `tags`."""
    return (tags_json(tags), *unpacked(packed_fields(tags)))


def packed_fields(tags: FileTags) -> tuple[Any, ...]:
    """`tags` as a worker sends them beside their text: packed (each array's bytes), and what
    else the graph reads."""
    return (*_array_bytes(PackedTags.of(tags)), tags.imports, tags.words, tags.error)


def _array_bytes(p: PackedTags) -> tuple[bytes | None, ...]:
    """The packed arrays as their bytes (`unpacked` makes them arrays again): a numpy array's
    pickle and unpickle cost five to ten times its bytes' (issue 22: the kernel's 55,543
    answers, four arrays each, about 1.5 CPU s, most of it in the daemon's reader); the
    names' words' two None when not made."""
    arrays = (p.def_keys, p.def_lines, p.ref_keys, p.ref_counts)
    words = (p.word_keys.tobytes(), p.word_counts.tobytes()) if p.words_made else (None, None)
    return (*(a.tobytes() for a in arrays), *words)


def wire_fields(raw: Raw, name_words: bool = True) -> tuple[str, tuple[Any, ...]]:
    """What a worker sends for a file's tags as plain values (TagParser.raw): the text
    `tags_json` gives, and `packed_fields`, made without a FileTags or a Definition object
    (issue 22: a tenth of a worker's CPU outside tree-sitter went to making them, and to
    turning them into lists for the JSON); without `name_words`, the words of the names it
    defines are not made (a first build's: the words' pass makes them, from the cached text)."""
    definitions, references, imports, words, error = raw
    names = [name for name, _line, _text in definitions]
    lines = [line for _name, line, _text in definitions]
    p = PackedTags.of_parts(lines, names, references, name_words)
    return raw_json(raw), (*_array_bytes(p), imports, words, error)


def raw_json(raw: Raw) -> str:
    """`tags_json` of tags as plain values: the same text, made by orjson, a compiled encoder
    (issue 22: the standard library's took 1.6 CPU s of the kernel's tags, orjson 0.2), where
    its text is the standard library's: all ASCII but DEL, which json escapes and orjson does
    not, as it does not escape any character past ASCII; else by the standard library."""
    fields = json_fields(*raw)
    try:
        text = orjson.dumps(fields)
    except TypeError:  # a lone surrogate, an integer over 64 bits
        text = b"\x7f"
    if text.isascii() and b"\x7f" not in text:
        return text.decode("ascii")
    return json.dumps(fields, separators=(",", ":"))


def unpacked(sent: tuple[Any, ...]) -> tuple[FileTags, PackedTags]:
    def_keys, def_lines, ref_keys, ref_counts, word_keys, word_counts, *rest = sent
    imports, words, error = rest
    light = FileTags(error=error, imports=tuple(imports), words=words)
    keys, lines = np.frombuffer(def_keys, KEY), np.frombuffer(def_lines, np.int32)
    refs, counts = np.frombuffer(ref_keys, KEY), np.frombuffer(ref_counts, np.int32)
    if word_keys is None:  # not made: the words' pass gives them
        return light, PackedTags(keys, lines, refs, counts, words_made=False)
    said = np.frombuffer(word_keys, KEY), np.frombuffer(word_counts, np.int32)
    return light, PackedTags(keys, lines, refs, counts, *said)


def batches(work: Sequence[tuple[str, str, bytes]], workers: int) -> list[list[int]]:
    """The work's indexes in batches, in order: at most BATCH_FILES files and BATCH_BYTES (but
    for one file), and no more than a worker's share of the files still to go, so the last
    files go out a few at a time and the workers finish together (the caller waits for the
    last one: with whole batches to the end, a worker sat idle for up to a batch at the end of
    each of a build's chunks)."""
    out: list[list[int]] = []
    batch: list[int] = []
    held, cap = 0, BATCH_FILES
    for index, (_path, _language, source) in enumerate(work):
        if batch and (len(batch) >= cap or held + len(source) > BATCH_BYTES):
            out.append(batch)
            batch, held = [], 0
        if not batch:
            cap = max(1, min(BATCH_FILES, (len(work) - index) // workers))
        batch.append(index)
        held += len(source)
    if batch:
        out.append(batch)
    return out
