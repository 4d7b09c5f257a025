"""The C tags of a file that holds only preprocessor directives, found without tree-sitter.

Of the kernel's .c/.h files, about one in eleven is such a file (generated register headers
and the like: every line outside comments a directive or its continuation), and on such a file
tree-sitter's C query captures only two things: the name of each `#define` (a definition, at
the name's 0-based line) and the function of each call in an `#if`/`#elif` condition (a
reference; `defined(X)` is not a call). `scan` finds both in one pass of regular expressions,
the way tree-sitter's C grammar reads them, and gives up (None: the caller parses the file)
wherever its reading could differ: anything but a directive outside comments, a block comment
that spans lines inside a directive, an `#if` condition beyond names, calls, integers and
operators, a keyword of the grammar where a name goes, an `#include` of anything but `<...>` or
`"..."`, unbalanced conditionals, a carriage return alone, a last line without its newline.
tests/workspace/test_repomap_preproc_tags.py compares it with tree-sitter; bench/kernel_directives.py
does over every .c/.h file of the kernel.
"""

from __future__ import annotations

import re
from collections import Counter

from tokend.adapters.tags.preproc_if import KEYWORDS, Condition, GiveUp, tokens

Scanned = tuple[list[tuple[str, int]], dict[str, int]]  # (name, line) defined; name -> calls

_NAME = rb"[A-Za-z_][A-Za-z0-9_]*"
_GAP = rb"(?:[ \t]|\\\r?\n)"  # what may separate a directive's words (a continuation too)
_COMMENT = rb"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"  # a block comment
# Between directives: blanks and comments (a line comment goes on past a backslash-newline).
_BETWEEN = re.compile(
    rb"(?>(?:[ \t\n\f\v]+|\r\n|" + _COMMENT + rb"|//[^\\\n]*(?:\\+(?:.|\r?\n)[^\\\n]*)*)*)"
)
# Whole lines taken at once (most of a register header): #defines of one line whose body holds
# no `/` and no backslash, blank lines, and comments without a `#` (so that the only lines in a
# run that start with one are its #defines: `_DEFINE_LINE` finds them by line).
_QUIET = rb"[ \t\f\v]*(?:/\*[^*#]*\*+(?:[^/*#][^*#]*\*+)*/[ \t\f\v]*)*(?://[^\\\n#]*)?\r?\n"
_LINE_COMMENT_END = rb"/\*[^*\n]*\*+(?:[^/*\n][^*\n]*\*+)*/"  # a block comment on one line
# (without a body, the name or a comment must meet the newline: see _body)
_SIMPLE = (rb"[ \t]*#[ \t]*define[ \t]+" + _NAME + rb"(?:[ \t]+[^/\\\n \t\r][^/\\\n]*(?:"
           + _LINE_COMMENT_END + rb"[ \t\r]*)?|[ \t]*" + _LINE_COMMENT_END + rb")?\r?\n")  # fmt: skip
_RUN = re.compile(rb"(?:" + _QUIET + rb"|" + _SIMPLE + rb")++")
_DEFINE_LINE = re.compile(rb"^(?:[ \t]*#[ \t]*define[ \t]+(" + _NAME + rb"))?", re.MULTILINE)
# A line that starts with a name or a brace: code (when it continues no directive), or the text
# of a comment. Most files that are not directives only have one early: found at C speed.
_CODE_START = re.compile(rb"\n[A-Za-z_{}]")
_DIRECTIVE = re.compile(rb"#[ \t]*([A-Za-z0-9]\w*)")
# The rest of a directive's logical line: up to a newline without a backslash before it. A block
# comment is taken whole, so a newline inside one (which tree-sitter reads past) is seen after.
_REST = re.compile(rb"(?:[^\\\n/]+|\\\r?\n|\\|" + _COMMENT + rb"|/(?!\*))*")
_BLOCK = re.compile(_COMMENT)
_LINE_COMMENT = re.compile(rb"//(?:\\+(?:.|\r?\n)|[^\\\n])*")
_DEFINE = re.compile(_GAP + rb"+(" + _NAME + rb")(\()?")
_PARAMS = re.compile(rb"[ \t]*(?:(?:" + _NAME + rb"|\.\.\.)[ \t]*(?:,[ \t]*(?:" + _NAME
                     + rb"|\.\.\.)[ \t]*)*)?\)")  # fmt: skip
_AFTER_NAME = frozenset(b" \t\r\n\\/")  # what may follow a #define's name (else: give up)
_BLANKS = re.compile(rb"(?:[ \t]|\\\r?\n)*")
# The grammar's macro body after its first character: a `/` and the character after it together
_ARG = re.compile(rb"(?:\\\r?\n|/[^*]|[^/\n])*")
_IFDEF = re.compile(_GAP + rb"+(" + _NAME + rb")" + _GAP + rb"*\r?")
_INCLUDE = re.compile(_GAP + rb"*(?:<[^>\n]*>|\"[^\"\\\n]*\")")
_OPENS, _CLOSES = frozenset({b"if", b"ifdef", b"ifndef"}), b"endif"
_BRANCHES = frozenset({b"elif", b"else"})
_KNOWN = (b"define", b"include", b"if", b"elif", b"else", b"endif")  # another word they begin


def scan(source: bytes) -> Scanned | None:
    """The definitions and call references tree-sitter's C tags query finds in `source`, if it
    holds only directives; None when it does not, or when its reading could differ."""
    if not source.endswith(b"\n") or _code(source):
        return None
    try:
        found = _scan(source)
    except GiveUp:
        return None
    return found if source.count(b"\r") == source.count(b"\r\n") else None


def _scan(source: bytes) -> Scanned:
    definitions: list[tuple[str, int]] = []
    calls: Counter[bytes] = Counter()
    open_ifs: list[bool] = []  # per open conditional: whether its #else was seen
    at, end = 0, len(source)
    line = counted = 0  # the line of offset `counted`
    while True:
        if at == 0 or source[at - 1] == 0x0A:  # (a run is whole lines)
            run = _RUN.match(source, at)
            if run is not None:
                names = _DEFINE_LINE.findall(source, at, run.end())  # one entry a line
                if not KEYWORDS.isdisjoint(names):
                    raise GiveUp
                line += source.count(b"\n", counted, at)
                counted = at
                definitions += [(n.decode("ascii"), line + i) for i, n in enumerate(names) if n]
                at = run.end()
        at = _BETWEEN.match(source, at).end()  # type: ignore[union-attr]  # (matches empty)
        if at >= end:
            break
        directive = _DIRECTIVE.match(source, at)
        if directive is None:
            raise GiveUp  # code: tree-sitter parses it
        word, body = directive[1], directive.end()
        stop = _REST.match(source, body).end()  # type: ignore[union-attr]
        if stop >= end or source[stop] != 0x0A:
            raise GiveUp
        if word == b"define":
            name, at_name = _define(source, body, stop)
            line += source.count(b"\n", counted, at_name)
            counted = at_name
            definitions.append((name, line))
        elif word in _OPENS or word in _BRANCHES or word == _CLOSES:
            _conditional(word, source, body, stop, open_ifs, calls)
        elif word == b"include":
            found = _INCLUDE.match(source, body)
            if found is None:
                raise GiveUp
            _only_comments(source, found.end(), stop)
        elif word.startswith(_KNOWN) or _spans_lines(source, body, stop):
            raise GiveUp  # (#elifdef, #ifdefX: where tree-sitter's reading is not sure)
        else:  # #undef, #pragma, #error, ...: a word and the grammar's macro body
            _body(source, body, stop)
        at = stop + 1
    if open_ifs:
        raise GiveUp
    references = {name.decode("ascii"): count for name, count in calls.items()}
    return definitions, references


def _code(source: bytes) -> bool:
    """Whether a line of `source` starts like code without continuing a directive."""
    return any(source[m.start() - 1] not in b"\\\r" for m in _CODE_START.finditer(source))


def _define(source: bytes, body: int, stop: int) -> tuple[str, int]:
    """A #define's name and where it starts."""
    found = _DEFINE.match(source, body)
    if found is None or found[1] in KEYWORDS:
        raise GiveUp
    after = found.end()
    if found[2] is not None:  # a function-like macro: its parameters as the grammar has them
        params = _PARAMS.match(source, after)
        if params is None:
            raise GiveUp
        after = params.end()
    elif after < len(source) and source[after] not in _AFTER_NAME:
        raise GiveUp
    _body(source, after, stop)
    return found[1].decode("ascii"), found.start(1)


def _body(source: bytes, start: int, stop: int) -> None:
    """A macro body (the grammar's preproc_arg) from `start` to the newline at `stop`, read as
    the grammar's token reads it (`_ARG`: a `/` and the character after it go together, so a
    `/` before a newline takes the newline, and `//*` opens no comment). Given up when its
    reading could end elsewhere than at `stop`: no body but blanks before the newline (the
    grammar's blanks take the newline, and the next line's text is the body), a body that takes
    the newline, or a comment after which anything but blanks follows, or that spans lines."""
    at = _BLANKS.match(source, start, stop).end()  # type: ignore[union-attr]
    if source.startswith(b"//", at):
        return  # a line comment, to the newline
    if not source.startswith(b"/*", at):
        if at == stop or source[at:stop] == b"\r":  # no body
            if at > start:
                raise GiveUp
            return
        at = _ARG.match(source, at).end()  # type: ignore[union-attr]
        if at == stop:
            return
        if not source.startswith(b"/*", at):
            raise GiveUp  # it took the newline, or it stopped before it
        tail = b" \t\r"  # after a body, blanks may follow its comment
    else:
        tail = b"\r"  # without one, the newline must (else the next line is the body)
    comment = _BLOCK.match(source, at, stop)
    if comment is None or b"\n" in comment[0] or source[comment.end() : stop].strip(tail):
        raise GiveUp


def _spans_lines(source: bytes, start: int, stop: int) -> bool:
    """Whether a block comment between `start` and `stop` holds a newline."""
    return any(b"\n" in c[0] for c in _BLOCK.finditer(source, start, stop))


def _only_comments(source: bytes, start: int, stop: int) -> None:
    """Nothing but blanks and comments (each on its line) from `start` to `stop`."""
    text = _LINE_COMMENT.sub(b"", _BLOCK.sub(b" ", source[start:stop]))
    if text.replace(b"\\\r\n", b"").replace(b"\\\n", b"").strip(b" \t\r\f\v") or _spans_lines(
        source, start, stop
    ):
        raise GiveUp


def _conditional(
    word: bytes,
    source: bytes,
    body: int,
    stop: int,
    open_ifs: list[bool],
    calls: Counter[bytes],
) -> None:
    if word == _CLOSES:
        if not open_ifs:
            raise GiveUp
        open_ifs.pop()
    elif word in _BRANCHES:
        if not open_ifs or open_ifs[-1]:
            raise GiveUp  # nothing open, or a branch after its #else
        open_ifs[-1] = word == b"else"
    else:
        open_ifs.append(False)
    if word in (b"else", _CLOSES):
        _only_comments(source, body, stop)
        return
    if _spans_lines(source, body, stop):
        raise GiveUp
    text = _LINE_COMMENT.sub(b"", _BLOCK.sub(b" ", source[body:stop]))
    if word != b"if" and word != b"elif":  # #ifdef / #ifndef: one name
        name = _IFDEF.fullmatch(text)
        if name is None or name[1] in KEYWORDS:
            raise GiveUp
        return
    if text[:1] not in (b" ", b"\t", b"(", b"\\", b"!", b"~", b"-", b"+"):
        raise GiveUp
    Condition(tokens(text.rstrip(b"\r")), calls).whole()
