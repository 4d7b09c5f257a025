"""A shell command line split into words, in time linear in its length.

The same words as `shlex.split(text)` (POSIX mode, no comments): whitespace (space, tab, CR,
LF) separates words; single quotes keep everything literally; inside double quotes a backslash
escapes only `"` and `\\` (else it stays); outside quotes a backslash escapes any character; an
empty quoted string is a word. `shlex` builds each word one character at a time by string
concatenation, which costs time quadratic in a word's length: a 640,000-character base64 blob
took ~40 s. Here every run of ordinary characters is taken by one regular-expression match and
a word's pieces are joined once.
"""

from __future__ import annotations

import re

_WHITESPACE = " \t\r\n"
# One piece of a word per match: a run of plain characters, a single-quoted string, a
# double-quoted string, or a backslash and the character it escapes. Unclosed quotes and a
# trailing backslash do not match (the caller says so).
_PIECE = re.compile(
    r"""[^ \t\r\n'"\\]+"""  # plain characters
    r"""|'([^']*)'"""  # '...': literal
    r'''|"((?:[^"\\]|\\.)*)"'''  # "...": \" and \\ are escapes, other backslashes stay
    r"""|\\(.)""",  # \c outside quotes: c
    re.DOTALL,
)
_SPACE = re.compile(r"[ \t\r\n]+")
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\(["\\])')


def split_words(text: str) -> list[str]:
    """The words of `text` as `shlex.split(text)` gives them; ValueError with shlex's message
    for an unclosed quote ("No closing quotation") or a trailing backslash ("No escaped
    character")."""
    words: list[str] = []
    pieces: list[str] = []
    in_word = False
    position, end = 0, len(text)
    while position < end:
        char = text[position]
        if char in _WHITESPACE:
            if in_word:
                words.append("".join(pieces))
                pieces, in_word = [], False
            space = _SPACE.match(text, position)
            assert space is not None
            position = space.end()
            continue
        match = _PIECE.match(text, position)
        if match is None:
            if char == "\\":
                raise ValueError("No escaped character")
            raise ValueError("No closing quotation")
        single, double, escaped = match.groups()
        if single is not None:
            pieces.append(single)
        elif double is not None:
            pieces.append(_DOUBLE_QUOTED_ESCAPE.sub(r"\1", double))
        elif escaped is not None:
            pieces.append(escaped)
        else:
            pieces.append(match.group())
        in_word = True
        position = match.end()
    if in_word:
        words.append("".join(pieces))
    return words
