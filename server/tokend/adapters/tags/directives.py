"""A C file that holds nothing but preprocessor lines, comments and blank lines, tagged without
tree-sitter (issue 22: 4,998 of the kernel's 55,361 .c/.h files, the register headers and the
like). Under tokend's C query such a file's only tags are its `#define` names at their lines
(`preproc_def`, `preproc_function_def`): a macro's body is one opaque token (`preproc_arg`),
and a file of `#ifdef`/`#ifndef`/`#else`/`#endif`, `#include`, `#undef`, `#pragma` lines holds
no reference. `#if`/`#elif` conditions are expressions that may call (`@ref`): not taken here.

`defined_names` gives the (name, line) of every `#define`, or None whenever it is not sure
that tree-sitter-c (0.24, the locked wheel) parses the file into exactly those: a line it does
not know, an unbalanced `#ifdef`, bytes outside printable ASCII, a lone CR, a comment in the
middle of a directive, a blank at a directive's end, a parameter list the grammar refuses
(`args...`), a file ending inside a directive. None sends the file to the parser. Checked
against tree-sitter over every kernel C file it takes (bench/kernel_directives.py: 4,375 files,
78 MB, none differing) and over generated files (tests/adapters/test_repomap_directives_oracle.py,
which a new grammar's wheel must pass too).
"""

from __future__ import annotations

import re
from itertools import compress, repeat
from operator import itemgetter, not_

_LINE = itemgetter(1)
_CODE = re.compile(rb"\n[^#\s/*]")  # a line that is not a directive, a comment or blank
_PRINTABLE = bytes(range(32, 127)) + b"\t\n"
_LONE_CR = re.compile(r"\r(?!\n)")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAM = r"(?:" + _NAME + r"|\.\.\.)[ \t]*"
_PARAMS = r"\([ \t]*(?:" + _PARAM + r"(?:,[ \t]*" + _PARAM + r")*)?\)"
_END = r"(?=[ \t\r/]|\Z)"  # what may follow a directive's word or name
_DEFINE = re.compile(r"[ \t]*#[ \t]*define[ \t]+(" + _NAME + r")(?:" + _PARAMS + r"|" + _END + r")")
# Every line of a file, its name for a plain `#define` (no comment, no continuation, no `/`, no
# blank at its end), else empty: the lines the loop below reads one by one (most of a register
# header is plain). A directive's line that ends in a blank is never taken: tree-sitter-c reads
# the next line as its value (`#define A ` then `#define B`: one definition)
_PLAIN = re.compile(
    r"[ \t]*#[ \t]*define[ \t]+(" + _NAME + r")(?:" + _PARAMS + r"(?:[^\n/\\]*[^\s/\\])?"
    r"|(?:[ \t]+[^\n/\\]*[^\s/\\])?)\r?\n|.*\n"
)
_IFDEF = re.compile(r"[ \t]*#[ \t]*ifn?def[ \t]+" + _NAME + _END)
_ELSE = re.compile(r"[ \t]*#[ \t]*else" + _END)
_ENDIF = re.compile(r"[ \t]*#[ \t]*endif" + _END)
_INCLUDE = re.compile(r'[ \t]*#[ \t]*include[ \t]*(?:<[^>\\]*>|"[^"\\]*")')
_CALL = re.compile(r"[ \t]*#[ \t]*(?:undef|pragma|error|warning)" + _END)
_CLOSED = re.compile(r"\r?")  # after a directive's comment: a blank would swallow the next line
_SLASH_CUT = re.compile(r"/(?:\\|\r|\Z)")  # a `/` the grammar's preproc_arg would run past
Named = list[tuple[str, int, str]]  # (name, line, "") as TagParser.raw's definitions


def defined_names(source: bytes) -> Named | None:
    """Every `#define`'s (name, 0-based line, "") of a file of preprocessor lines, comments and
    blank lines only, in order, as tree-sitter-c gives them under tokend's C query; None when
    unsure."""
    if source[:1] not in (b"#", b" ", b"\t", b"/", b"\r", b"\n") or _CODE.search(source):
        return None
    if not source.isascii() or not source.endswith(b"\n"):
        return None
    odd = source.translate(None, _PRINTABLE)
    text = source.decode("ascii")
    if odd and (odd.strip(b"\r") or _LONE_CR.search(text) is not None):
        return None
    plain = _PLAIN.findall(text)
    named = list(compress(zip(plain, range(len(plain)), repeat(""), strict=False), plain))
    hard = list(compress(range(len(plain)), map(not_, plain)))
    if not hard:
        return named
    return _with_hard_lines(text.split("\n"), plain, hard, named)


def _with_hard_lines(
    lines: list[str], plain: list[str], hard: list[int], named: Named
) -> Named | None:
    """The lines that are not plain definitions, read one by one; a plain line within a
    comment or a directive that a hard one opens makes the file unsure."""
    found: Named = []
    open_blocks: list[bool] = []  # per open #ifdef: has its #else been seen
    at = 0
    for line in hard:
        if line < at:
            continue
        text = lines[line]
        first = text.lstrip(" \t\r")
        if not first:
            at = line + 1
        elif first.startswith("#"):
            at = _directive(lines, line, found, open_blocks)
        elif first.startswith("/"):
            at = _comments(lines, line, len(text) - len(first))
        else:
            return None
        if at < 0 or any(plain[line + 1 : at]):
            return None
    if open_blocks:
        return None
    return sorted(named + found, key=_LINE) if found else named


def _logical(lines: list[str], at: int) -> tuple[str, int]:
    """The directive starting at line `at` with its `\\` continuations, and the next line."""
    text = lines[at]
    end = at + 1
    while text.endswith(("\\", "\\\r")) and end < len(lines):
        text = text + "\n" + lines[end]
        end += 1
    return text, end


def _directive(lines: list[str], at: int, named: Named, blocks: list[bool]) -> int:
    """One directive: the next line to read, or -1 when unsure."""
    text, end = _logical(lines, at)
    if end == len(lines):  # continued into the end of the file: no newline ends it
        return -1
    found = _DEFINE.match(text)
    if found is not None:
        named.append((found.group(1), at, ""))
        return _tail(lines, text, found.end(), end, body=True)
    found = _CALL.match(text)
    if found is not None:
        return _tail(lines, text, found.end(), end, body=True)
    found = _INCLUDE.match(text) or _IFDEF.match(text)
    if found is not None:
        if found.re is _IFDEF:
            blocks.append(False)
        return _tail(lines, text, found.end(), end, body=False)
    found = _ELSE.match(text)
    if found is not None:
        if not blocks or blocks[-1]:
            return -1
        blocks[-1] = True
        return _tail(lines, text, found.end(), end, body=False)
    found = _ENDIF.match(text)
    if found is not None and blocks:
        blocks.pop()
        return _tail(lines, text, found.end(), end, body=False)
    return -1


def _tail(lines: list[str], text: str, start: int, end: int, *, body: bool) -> int:
    """What follows a directive's word, name or path: with `body`, any text (the grammar's
    opaque preproc_arg) up to its first `/*`; then at most one comment, which must end the
    directive (a comment closed and nothing after it on its line); no blank at the end of
    the directive's line. -1 when unsure."""
    rest = text[start:]
    opened = rest.find("/*")
    head = rest if opened < 0 else rest[:opened]
    if body:
        if _SLASH_CUT.search(head) is not None:
            return -1
    elif not _blank_or_line_comment(head, opened < 0):
        return -1
    if opened < 0:
        return -1 if rest.rstrip("\r").endswith((" ", "\t")) else end
    if "//" in head:  # `// ... /*`: a line comment or an opened one, not sure which
        return -1
    closed = rest.find("*/", opened + 2)
    if closed >= 0:
        return end if _CLOSED.fullmatch(rest, closed + 2) is not None else -1
    if "\\\n" in rest or "\\\r\n" in rest:
        return -1  # a comment opened in a continued directive
    return _comment_end(lines, end)


def _blank_or_line_comment(head: str, last: bool) -> bool:
    stripped = head.strip(" \t\r")
    return not stripped or (last and stripped.startswith("//"))


def _comment_end(lines: list[str], at: int) -> int:
    """The line after the one where an open `/*` comment closes, with nothing after it."""
    while at < len(lines):
        closed = lines[at].find("*/")
        if closed >= 0:
            return at + 1 if _CLOSED.fullmatch(lines[at], closed + 2) is not None else -1
        at += 1
    return -1


def _comments(lines: list[str], at: int, column: int) -> int:
    """Comments outside any directive, from line `at`'s `column`: the next line to read, or
    -1 when code shares a line with them."""
    line = lines[at]
    while True:
        if line.startswith("//", column):
            return _logical(lines, at)[1]
        if not line.startswith("/*", column):
            return -1
        closed = line.find("*/", column + 2)
        while closed < 0:
            at += 1
            if at >= len(lines):
                return -1
            line = lines[at]
            closed = line.find("*/")
        column = closed + 2
        while column < len(line) and line[column] in " \t\r":
            column += 1
        if column == len(line):
            return at + 1
