"""What the repo map knows of one file: the symbols it defines (with the defining line's text),
the identifiers it refers to and what it imports. Produced by the tags adapter (tree-sitter), cached by content
hash as JSON, consumed by core.repomap.graph, which keeps each name as a 64-bit key and not as a
string (so names are not interned: the interpreter's table of interned strings never shrinks,
and a kernel's worth of names left it 7 MB bigger for good)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokend.core.repomap.keys import sub_words, word_ids
from tokend.core.repomap.text import WORDS_MAX as WORDS_MAX

LINE_TEXT_CHARS = 160  # a defining line longer than this is cut (with "…")
# the error of a file whose tag worker process died on it: its empty tags are not kept in the
# cache, so the file is tried again later
WORKER_DIED = "the tag worker process died parsing this file"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Definition:
    """`name` is defined at 0-based `line`, whose text (right-stripped, cut) is `text`."""

    name: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class FileTags:
    definitions: tuple[Definition, ...] = ()
    references: Mapping[str, int] = field(default_factory=dict)  # identifier -> occurrences
    error: str | None = None  # why the file has no tags (a grammar that failed)
    imports: tuple[str, ...] = ()  # what the file imports, as written (core.repomap.imports)
    words: Mapping[int, int] = field(default_factory=dict)  # text_words of the file (by id)

    def to_json(self) -> dict[str, Any]:
        definitions = [(d.name, d.line, d.text) for d in self.definitions]
        return json_fields(definitions, self.references, self.imports, self.words, self.error)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> FileTags:
        definitions = tuple(Definition(str(n), int(li), str(t)) for n, li, t in raw.get("d", ()))
        references = {str(k): int(v) for k, v in dict(raw.get("r", {})).items()}
        imports = tuple(str(spec) for spec in raw.get("i", ()))
        ids, counts = raw.get("w") or ((), ())
        words = dict(zip(ids, counts, strict=True))  # our own cache's: at C speed
        return cls(definitions, references, raw.get("e"), imports, words)


def json_fields(
    definitions: Sequence[tuple[str, int, str]],
    references: Mapping[str, int],
    imports: Sequence[str],
    words: Mapping[int, int],
    error: str | None,
) -> dict[str, Any]:
    """A file's tags as the workspace cache keeps them (FileTags.from_json reads them back),
    from a FileTags or from a tag worker's plain values (adapters.tag_wire.raw_json)."""
    out: dict[str, Any] = {"d": list(definitions), "r": dict(references)}  # tuples: JSON arrays
    if error:
        out["e"] = error
    if imports:
        out["i"] = list(imports)
    if words:
        out["w"] = [list(words), list(words.values())]
    return out


def line_text(raw: str) -> str:
    text = raw.rstrip()
    return text if len(text) <= LINE_TEXT_CHARS else text[: LINE_TEXT_CHARS - 1] + "…"


def spoken(text: str) -> dict[str, int]:
    """What a file says, as BM25 reads it: the words (core.repomap.keys.sub_words) of every
    identifier-like token of its text (code, comments, docstrings, strings) and each token of
    two words or more itself (lowered: `parse_config`, `httpconfig`), with their counts: the
    WORDS_MAX most frequent (ties: the first said), in the order first said."""
    counts: Counter[str] = Counter()
    for token, n in Counter(_IDENT.findall(text)).items():
        parts = sub_words(token)
        for word in parts:
            counts[word] += n
        if len(parts) >= 2:
            counts[token.lower()] += n
    if len(counts) <= WORDS_MAX:
        return dict(counts)
    cut = sorted(counts.values())[-WORDS_MAX]
    kept = [(w, n) for w, n in counts.items() if n > cut]
    kept += [(w, n) for w, n in counts.items() if n == cut][: WORDS_MAX - len(kept)]
    return dict(kept)


def text_words(text: str) -> dict[int, int]:
    """`spoken(text)` by word id (core.repomap.keys.word_id), as the tags carry it."""
    return word_ids(spoken(text))
