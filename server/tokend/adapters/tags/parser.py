"""Tags of one file with tree-sitter: parse with the language's grammar (compiled into its
wheel: nothing is downloaded), run tokend's query, keep definitions and references.

A grammar that cannot be loaded, or a parse that fails, gives FileTags with `error` set: that
file alone has no tags. Parsers are kept per thread (a tree-sitter Parser is not thread-safe).
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections import Counter
from operator import itemgetter
from typing import Any

from tokend.adapters.tags.directives import defined_names
from tokend.adapters.tags.queries import QUERIES
from tokend.core.repomap.tags import Definition, FileTags
from tokend.core.repomap.text import count_words

log = logging.getLogger(__name__)
# A file's tags as plain values: its definitions (name, line, line text), references, imports,
# words and error (FileTags' fields, a definition a tuple).
Raw = tuple[list[tuple[str, int, str]], dict[str, int], tuple[str, ...], dict[int, int], str | None]
_BY_LINE = itemgetter(1, 0)  # a (name, line) pair's order: by line, then name
# A definition's line text is not kept: the map reads its lines from the file when it shows them
# (core.repomap.render), and the kernel's definitions' lines were half of their cached JSON
# (issue 22: 25.7 MB of 1,500 files' tags against 11.8 without), decoded, cut, sent and stored.
NO_LINE_TEXT = ""

# language -> (module, function returning the grammar's pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
}

_languages_lock = threading.Lock()
_languages: dict[str, tuple[Any, Any] | str] = {}  # language -> (Language, Query) or the error


def _load(language: str) -> tuple[Any, Any] | str:
    with _languages_lock:
        found = _languages.get(language)
        if found is not None:
            return found
        try:
            import tree_sitter

            module_name, function = GRAMMARS[language]
            module = importlib.import_module(module_name)
            grammar = tree_sitter.Language(getattr(module, function)())
            loaded: tuple[Any, Any] | str = (grammar, tree_sitter.Query(grammar, QUERIES[language]))
        except Exception as exc:  # a missing wheel, an ABI mismatch, a query error
            log.warning("the %s grammar is unavailable: %s", language, exc)
            loaded = f"the {language} grammar is unavailable: {exc}"
        _languages[language] = loaded
        return loaded


def grammar_available(language: str) -> bool:
    return language in GRAMMARS and not isinstance(_load(language), str)


READ_PIECE_BYTES = 1 << 10


def _reader(source: bytes) -> Any:
    """The source for tree-sitter a piece at a time. Parsing a bytes object holds the
    interpreter for the whole parse (seconds over 1 MB of prose in a .py buffer, every other
    thread and the event loop waiting: issue 17's fuzz); with a read callback and a progress
    callback, Python code runs every few hundred parse steps, where the interpreter is handed
    to a thread that asks for it (sys.setswitchinterval)."""
    view = memoryview(source)

    def read(offset: int, _point: Any) -> bytes:
        return bytes(view[offset : offset + READ_PIECE_BYTES])

    return read


def _go_on(_offset: int, _has_error: bool) -> bool:
    return False  # never cancel: being called is the point (see _reader)


class TagParser:
    """tags(language, source) -> FileTags, usable from any thread. `alone`: the process has no
    other thread to hand the interpreter to (a tag worker), so tree-sitter is given the source
    whole, without the read and progress callbacks (`_reader`), which cost a tenth of the
    parse (issue 22: 2.35 against 2.15 CPU s over 1,500 kernel files)."""

    def __init__(self, *, alone: bool = False) -> None:
        self._local = threading.local()
        self.alone = alone

    def _parser(self, language: str, grammar: Any) -> Any:
        parsers: dict[str, Any] = self._local.__dict__.setdefault("parsers", {})
        parser = parsers.get(language)
        if parser is None:
            import tree_sitter

            parser = parsers[language] = tree_sitter.Parser(grammar)
        return parser

    def tags(self, language: str, source: bytes) -> FileTags:
        definitions, references, imports, words, error = self.raw(language, source)
        return FileTags(tuple(Definition(*d) for d in definitions), references, error, imports,
                        words)  # fmt: skip

    def raw(self, language: str, source: bytes, words: bool = True) -> Raw:
        """`tags` as plain values, without a Definition object (a tag worker sends them on as
        JSON and packed: adapters.tag_wire.wire_fields); without `words`, what the text says is
        not counted (its words empty: the first build counts them after its first map). A C
        file of preprocessor lines only is not parsed (adapters.tags.directives: the same tags,
        issue 22: 4,375 of the kernel's C files, 78 MB, about 2.6-2.9 CPU s of the workers')."""
        if language not in GRAMMARS:
            return _failed(f"no grammar for {language}")
        loaded = _load(language)
        if isinstance(loaded, str):
            return _failed(loaded)
        grammar, query = loaded
        if language == "c":  # a file of preprocessor lines only: its `#define` names alone
            directives = defined_names(source)
            if directives is not None:
                return directives, {}, (), count_words(source) if words else {}, None
        try:
            import tree_sitter

            parser = self._parser(language, grammar)
            if self.alone:
                tree = parser.parse(source)
            else:
                tree = parser.parse(_reader(source), progress_callback=_go_on)
            captures = tree_sitter.QueryCursor(query).captures(tree.root_node)
        except Exception as exc:
            return _failed(f"{language} parse failed: {exc}")
        named: list[tuple[str, int]] = []
        def_starts = set()
        for node in captures.get("def", ()):
            start = node.start_byte
            raw = source[start : node.end_byte]
            if not raw:
                continue
            named.append((raw.decode("utf-8", "replace"), node.start_point[0]))
            def_starts.add(start)
        references = _references(source, captures.get("ref", ()), def_starts)
        imports = sorted({spec for node in captures.get("import", ()) for spec in _specs(node)})
        return _raw(named, references, tuple(imports), source, words)


def _raw(
    named: list[tuple[str, int]],
    references: dict[str, int],
    imports: tuple[str, ...],
    source: bytes,
    words: bool,
) -> Raw:
    """A file's tags from its definitions' (name, line) (each pair once, ordered by line and
    name, with the line text it does not keep), its references (ordered by name) and imports,
    and the words of its text (with `words`)."""
    ordered = [(name, line, NO_LINE_TEXT) for name, line in sorted(set(named), key=_BY_LINE)]
    said = count_words(source) if words else {}
    return ordered, dict(sorted(references.items())), imports, said, None


def _failed(error: str) -> Raw:
    return [], {}, (), {}, error


def _references(source: bytes, nodes: Any, def_starts: set[int]) -> dict[str, int]:
    """The `@ref` captures but the definitions' own names, counted: counted as bytes and each
    distinct one decoded once (the kernel: 30 references a file, the same few names again and
    again)."""
    counted = Counter(
        [source[n.start_byte : n.end_byte] for n in nodes if n.start_byte not in def_starts]
    )
    references: dict[str, int] = {}
    for raw, count in counted.items():
        if raw:  # (two byte strings may decode alike: invalid UTF-8 becomes U+FFFD)
            name = raw.decode("utf-8", "replace")
            references[name] = references.get(name, 0) + count
    return references


def _specs(node: Any) -> list[str]:
    """What one `@import` capture imports, as written: a Python `from m import a, b` gives m,
    m.a and m.b (a name may be a module of package m); a Go path loses its quotes."""
    text = node.text.decode("utf-8", "replace") if node.text else ""
    if node.type != "import_from_statement":
        return [text.strip('"`')] if text.strip('"`') else []
    module = node.child_by_field_name("module_name")
    base = module.text.decode("utf-8", "replace") if module is not None and module.text else ""
    out = [base] if base else []
    for name in node.children_by_field_name("name"):
        inner = name.child_by_field_name("name") if name.type == "aliased_import" else name
        if inner is not None and inner.text:
            word = inner.text.decode("utf-8", "replace")
            out.append(base + word if base.endswith(".") else f"{base}.{word}")
    return out
