"""What a workspace file is, judged from its name and first bytes, and what it costs roughly.

The rules the file index applies to every file (protocol.md, workspace/fileTokens):

- **binary**: a NUL byte in the first 8,000 bytes (git's own test). Not counted (0 tokens,
  basis "skipped"): an agent does not send it as text.
- **too large**: over the size limit (1 MiB by default). Not read, not counted ("skipped").
- **invalid UTF-8**: counted as decoded with U+FFFD for each bad sequence (what a reader that
  replaces errors sends); the entry says so in its `reason`.
- **unreadable**: an OSError when reading (permissions, a file gone since the walk): "skipped"
  with the error's text; only that file is affected.

The fast estimate needs no read: bytes divided by the characters-per-token ratio of the file's
content class (as the estimator measured them), at least 1 for a non-empty file.
"""

from __future__ import annotations

import math
import posixpath
from dataclasses import dataclass

from tokend.core.counting.estimate import DEFAULT_CHARS_PER_TOKEN
from tokend.core.types import ContentClass

BINARY_SNIFF_BYTES = 8000  # git's buffer_is_binary() looks at this many
DEFAULT_MAX_FILE_BYTES = 1 << 20

# Language of a source file by extension (the repo map's tag queries are keyed on these).
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".rb": "ruby",
}

_JSON_EXTS = frozenset({".json", ".jsonl", ".ipynb", ".geojson", ".lock"})
_PROSE_EXTS = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".org", ""})
_LOG_EXTS = frozenset({".log", ".out"})
_BLOB_EXTS = frozenset({".b64", ".pem", ".crt", ".min.js"})


def extension(path: str) -> str:
    """The lower-cased extension of a path ("" for none; ".d.ts"-style double ones are not)."""
    return posixpath.splitext(path)[1].lower()


def language_of(path: str) -> str | None:
    """The tag language of a source file, or None."""
    return LANGUAGES.get(extension(path))


def content_class_of(path: str) -> ContentClass:
    """The content class a file's text most likely has, from its name alone."""
    ext = extension(path)
    if ext in LANGUAGES:
        return ContentClass.CODE
    if ext in _JSON_EXTS:
        return ContentClass.JSON
    if ext in _LOG_EXTS:
        return ContentClass.LOG
    if ext in _BLOB_EXTS or path.endswith(".min.js"):
        return ContentClass.BLOB
    if ext in _PROSE_EXTS:
        return ContentClass.PROSE
    return ContentClass.CODE  # config files, scripts, markup: closer to code than to prose


def is_binary(head: bytes) -> bool:
    """git's rule: a NUL byte among the first BINARY_SNIFF_BYTES bytes."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def estimate_file_tokens(size_bytes: int, content_class: ContentClass) -> int:
    """A fast estimate of a text file's tokens from its size in bytes (no read)."""
    if size_bytes <= 0:
        return 0
    return max(1, math.ceil(size_bytes / DEFAULT_CHARS_PER_TOKEN[content_class]))


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    replaced: bool  # invalid UTF-8 sequences became U+FFFD


@dataclass(frozen=True, slots=True)
class FileRead:
    """A file's bytes and text, or why it has none (`skipped`)."""

    data: bytes
    decoded: Decoded | None
    skipped: str | None


def decode_text(data: bytes) -> Decoded:
    """UTF-8 text of a file (a leading BOM dropped); invalid sequences become U+FFFD."""
    try:
        return Decoded(data.decode("utf-8-sig"), False)
    except UnicodeDecodeError:
        return Decoded(data.decode("utf-8-sig", errors="replace"), True)


INVALID_UTF8_REASON = "invalid UTF-8: counted with U+FFFD for each bad byte sequence"
BINARY_REASON = "binary (a NUL byte in the first 8,000 bytes): not counted"


def too_large_reason(size_bytes: int, limit_bytes: int) -> str:
    return f"{size_bytes:,} bytes, over the {limit_bytes:,}-byte limit: not counted"


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of a workspace as the index knows it. `path` is posix, relative to the root;
    `size_bytes` and `mtime_ns` as stat gave them; `estimate_tokens` the fast estimate (0 when
    skipped); `skipped` the reason it is not counted, None when it is."""

    path: str
    size_bytes: int
    mtime_ns: int
    content_class: ContentClass
    estimate_tokens: int
    skipped: str | None = None

    @property
    def language(self) -> str | None:
        return language_of(self.path)
