"""A C file of preprocessor directives only gets its tags without tree-sitter (issue 22: a
tenth of the kernel's .c/.h files, generated register headers and the like), and they are the
tags tree-sitter gives: the oracle is the parser with the scanner turned off. Whatever the
scanner is not sure of it leaves to tree-sitter; the cases below check both that what it takes
is read right and that it takes the common shapes."""

from __future__ import annotations

import random
import re

import pytest

from tokend.adapters.tags import TagParser
from tokend.adapters.tags import parser as tag_parser
from tokend.adapters.tags.preproc import scan
from tokend.adapters.tags.preproc_if import KEYWORDS
from tokend.core.repomap.tags import FileTags


def _tree_sitters(source: bytes, monkeypatch: pytest.MonkeyPatch) -> FileTags:
    with monkeypatch.context() as patched:
        patched.setattr(tag_parser, "scan", lambda _source: None)
        return TagParser(alone=True).tags("c", source)


# (source, whether the scanner must take it)
CASES: list[tuple[bytes, bool]] = [
    (b"#define A 1\n#define B 0x2UL /* b */\n", True),
    (
        b"/* licence\n * text */\n#ifndef G_H\n#define G_H\n#include <linux/x.h>\n"
        b'#include "y.h"\n#endif /* G_H */\n',
        True,
    ),
    (b"#define F(a, b) ((a) + (b))\n#define V(...) x\n#define E() 0\n", True),
    (b"#define LONG \\\n  (1 << \\\n   2)\n#define NEXT 3\n", True),
    (b"#  define SPACED\t7\n\t#\tdefine TABS 8\n", True),
    (b"#define A 1\r\n#ifdef A\r\n#define B 2 /* c */\r\n#endif\r\n", True),
    (
        b"#if IS_ENABLED(CONFIG_X) && defined(Y) || !defined Z\n#define Q 1\n"
        b"#elif KV(2, 6, 0) >= 3 && (W(1) - -2)\n#else\n#endif\n",
        True,
    ),
    (b"#if FOO (1)\n#endif\n#if 0\n#define DEAD 1\n#endif\n", True),
    (b"#undef A\n#pragma once\n#error stop here\n#warning and here\n", True),
    (b"#define A 1 // line comment\n#define C 3 // and another\n", True),
    (b"#define B 2 // ends in a slash /\n#define C 3\n", False),
    (b"#define A 1 /* a\n * b */\n#define B 2\n", False),  # a comment across lines
    (b"#define X(lock) \\\ndo { /* c */ \\\n f(); \\\n} while (0)\n", False),
    (b"#define A 1\nint x;\n", False),  # code
    (b"#define A 1", False),  # no last newline
    (b"#define A 1\r#define B 2\n", False),  # a carriage return alone
    (b"#endif\n", False),
    (b"#if A\n#define B\n", False),
    (b"#if sizeof(long) == 8\n#endif\n", False),  # a keyword where a name goes
    (b"#define inline __inline__\n", False),
    (b"#include FOO(x)\n", False),
    (b"#if __has_include(<a.h>)\n#endif\n", False),
    (b"#if A ? B : C\n#endif\n", False),
    (b"#else\n#endif\n", False),
    (b"#if A\n#else\n#elif B\n#endif\n", False),
    (b"#define A 1 /* c */ + 2\n", False),
    (b"#define DIV a/\n#define B 2\n", False),
    (b"#define A(x 1\n", False),
    (b"#elifdef A\n", False),
    # no body and blanks before the newline: the grammar's blanks take the newline, and the
    # next line's text becomes the body (found by fuzzing kernel headers)
    (b"#define X \n#define Y 1\n", False),
    (b"#define X(a)\t\n\n#define Y 1\n", False),
    (b"#define X /* c */ \n#define Y 1\n", False),
    (b"#define X \\\n\n#define Y 1\n", False),
    (b"#pragma \n#define Y 1\n", False),
    (b"#define X /* c */\n#define Y 1 /* d */ \n#define Z\r\n", True),
    (b"#define X 9 //* in us */\n#define Y 1\n", False),  # `//*` opens no comment
    (b"#define X 9 // in us\n#define Y 1 //\n", True),
    (b"", False),
]


@pytest.mark.parametrize(("source", "taken"), CASES)
def test_the_scanner_gives_tree_sitters_tags(
    source: bytes, taken: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (scan(source) is not None) == taken
    assert TagParser(alone=True).tags("c", source) == _tree_sitters(source, monkeypatch)


_PIECES = [
    b"#define {n} {v}",
    b"#define {n}({n}, {n}) (({n}) | {v})",
    b"#define {n} \\\n\t{v}",
    b"#define {n} {v} /* {n} */",
    b"#define {n}",
    b"#define {n} ",
    b"#define {n}({n})\t/* {n} */ ",
    b"#undef {n} ",
    b"# define {n}\t{v}",
    b"#include <{n}/{n}.h>",
    b'#include "{n}.h" // x',
    b"#undef {n}",
    b"/* {n} */",
    b"// {n}",
    b"",
    b"  ",
]
_OPENS = [b"#ifdef {n}", b"#ifndef {n} /* x */", b"#if defined({n}) && {n}({v}) > {v}",
          b"#if !{n} || ({n} << 2)"]  # fmt: skip
_BRANCHES = [b"#elif {n}({n}({v}), {v})", b"#else"]
_ODD = [b"int {n};", b"#define {n} 1 /* a\n b */", b"#if {n} ? 1 : 0", b"#endif", b"#else"]
_NAMES = ["REG_A", "FOO_BAR1", "x", "_Y", "BIT", "KV", "a9_b", "REG_B", "IS_ON", "reg_c"] * 4 + [
    "defined",
    "sizeof",
]


def _filled(piece: bytes, rng: random.Random) -> bytes:
    while b"{n}" in piece or b"{v}" in piece:
        piece = piece.replace(b"{n}", rng.choice(_NAMES).encode(), 1)
        piece = piece.replace(b"{v}", rng.choice([b"1", b"0x10UL", b"(1 << 3)"]), 1)
    return piece


def _lines(rng: random.Random, depth: int) -> list[bytes]:
    lines = []
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.02:
            lines.append(_filled(rng.choice(_ODD), rng))
        elif roll < 0.25 and depth < 3:  # a conditional block, its branches in order
            lines.append(_filled(rng.choice(_OPENS), rng))
            lines += _lines(rng, depth + 1)
            chosen = rng.sample(_BRANCHES, rng.randint(0, 2))
            for branch in [b for b in _BRANCHES if b in chosen]:  # #elif before #else
                lines += [_filled(branch, rng), *_lines(rng, depth + 1)]
            lines.append(b"#endif")
        else:
            lines.append(_filled(rng.choice(_PIECES), rng))
    return lines


def _generated(rng: random.Random) -> bytes:
    newline = b"\r\n" if rng.random() < 0.2 else b"\n"
    return newline.join(_lines(rng, 0)) + newline


def test_generated_files_get_tree_sitters_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(22)
    taken = calling = 0
    for _ in range(1000):
        source = _generated(rng)
        scanned = scan(source)
        if scanned is not None:
            taken += 1
            calling += bool(scanned[1])
            got = TagParser(alone=True).tags("c", source)
            assert got == _tree_sitters(source, monkeypatch), source
    assert taken >= 250 and calling >= 15  # the scanner is exercised, not always refusing


def test_a_file_of_directives_is_not_given_to_tree_sitter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Who computed the tags: tree-sitter's parser is asked for nothing on a register header
    (on main it parsed it), and still for a file of code."""
    header = b"".join(b"#define REG_%d 0x%x /* reg */\n" % (i, i * 4) for i in range(200))
    asked: list[str] = []
    real = TagParser._parser

    def counted(self: TagParser, language: str, grammar: object) -> object:
        asked.append(language)
        return real(self, language, grammar)

    monkeypatch.setattr(TagParser, "_parser", counted)
    tags = TagParser(alone=True).tags("c", header)
    assert asked == []
    assert [(d.name, d.line) for d in tags.definitions[:2]] == [("REG_0", 0), ("REG_1", 1)]
    TagParser(alone=True).tags("c", b"int main(void) { return f(); }\n")
    assert asked == ["c"]


def test_every_keyword_of_the_grammar_is_one_the_scanner_leaves_to_tree_sitter() -> None:
    """A grammar upgrade with a new keyword fails here rather than reading a name wrongly."""
    import tree_sitter
    import tree_sitter_c

    language = tree_sitter.Language(tree_sitter_c.language())
    kinds = (language.node_kind_for_id(i) for i in range(language.node_kind_count))
    words = {
        kind
        for i, kind in enumerate(kinds)
        if kind
        and re.fullmatch(r"[A-Za-z_]\w*", kind)
        and language.node_kind_is_visible(i)
        and not language.node_kind_is_named(i)
    }
    assert words and {w.encode() for w in words} <= KEYWORDS


def test_mutated_files_get_tree_sitters_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated files with a few characters inserted, deleted or changed (the way a fuzzer
    over the kernel's headers found the two readings above that differed)."""
    rng = random.Random(24)
    alphabet = b"#/*\\\n\r ()aXZ_09,<>\"'!&|?:.{};\t"
    taken = 0
    for _ in range(1500):
        source = bytearray(_generated(rng))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(source) + 1)
            roll = rng.random()
            if roll < 0.4 or at == len(source):
                source[at:at] = bytes([rng.choice(alphabet)])
            elif roll < 0.7:
                del source[at]
            else:
                source[at] = rng.choice(alphabet)
        if scan(bytes(source)) is not None:
            taken += 1
            got = TagParser(alone=True).tags("c", bytes(source))
            assert got == _tree_sitters(bytes(source), monkeypatch), bytes(source)
    assert taken >= 100
