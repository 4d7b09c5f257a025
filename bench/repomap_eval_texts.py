"""A commit message as a task's text (bench.repomap_eval): its git trailer block left out.

`Signed-off-by:`, `Co-authored-by:`, `Reviewed-by:`, `Change-Id:` ... name people and review
tools, which no task a user types would. The block is found as git finds it (trailer.c's
find_trailer_block_start, git's default configuration, no `trailer.*` keys): the last paragraph
after the title's, read from the end, is a trailer block when every line in it is a trailer (a
`Token: value` line, the token letters, digits and '-', whitespace allowed before the ':'; a line
that starts with whitespace continues the one above), or when at least one line starts with a
prefix git writes itself (`Signed-off-by: `, `(cherry picked from commit `) and trailers are at
least a quarter of its lines. Lines starting with '#' are comments to git: neither kind. What
is left is taken again, until git would find no trailer in it. A `---` line is text here, as in
any commit message (git log's `%(trailers)`), not the start of a patch.
"""

from __future__ import annotations

GIT_PREFIXES = ("Signed-off-by: ", "(cherry picked from commit ")


def _token_end(line: str) -> int:
    """The position of the ':' that ends a trailer's token, or -1 (git's find_separator)."""
    spaced = False
    for i, c in enumerate(line):
        if c == ":":
            return i
        if not spaced and (c.isascii() and c.isalnum() or c == "-"):
            continue
        if i and c in " \t":
            spaced = True
            continue
        break
    return -1


def _block_start(lines: list[str]) -> int:
    """The index of the trailer block's first line, or len(lines) when there is none."""
    title_end = next((i for i, s in enumerate(lines) if not s.strip()), len(lines))
    trailers = others = continued = 0
    recognized, only_blank = False, True
    for i in range(len(lines) - 1, title_end - 1, -1):
        line = lines[i]
        if line.startswith("#"):
            others, continued = others + continued, 0
            continue
        if not line.strip():
            if only_blank:
                continue
            others += continued
            if (recognized and trailers * 3 >= others) or (trailers and not others):
                return i + 1
            return len(lines)
        only_blank = False
        if line.startswith(GIT_PREFIXES):
            trailers, continued, recognized = trailers + 1, 0, True
        elif _token_end(line) >= 1 and not line[0].isspace():
            trailers, continued = trailers + 1, 0
        elif line[0].isspace():
            continued += 1
        else:
            others, continued = others + 1 + continued, 0
    return len(lines)


def without_trailers(message: str) -> str:
    """`message` without its git trailer blocks (and the blank lines before them), stripped: the
    last block, then the one git would find in what is left, until git would find none
    (sqlalchemy's `Fixes: / Closes: / Pull-request:` paragraph above its `Change-Id:` one)."""
    lines = message.strip().split("\n")
    while (start := _block_start(lines)) < len(lines):
        lines = lines[:start]
        while lines and not lines[-1].strip():
            lines.pop()
    return "\n".join(lines).strip()
