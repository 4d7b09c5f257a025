"""A C file of preprocessor lines only is tagged without tree-sitter (adapters.tags.directives,
issue 22), and must get exactly the tags tree-sitter gives it: the oracle is tree-sitter itself
(TagParser with the recognizer taken out), over generated files of every directive, comments of
both kinds in every position, continuations, CRLF, odd bytes and code. Whatever the recognizer
takes must be tagged alike (definitions with their lines, references, imports, error); what it
is unsure of goes to the parser."""

from __future__ import annotations

from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.adapters.tags import TagParser
from tokend.adapters.tags import parser as tag_parser
from tokend.adapters.tags.directives import defined_names

NAMES = st.sampled_from(
    ["A", "mmREG_0", "_X_H_", "x", "int", "defined", "sizeof", "if", "NULL", "__attr__", "a$b",
     "é", "F1", "ab_c"]
)  # fmt: skip
SPACE = st.sampled_from(["", " ", "\t", "  ", " \t"])
SOME_SPACE = st.sampled_from([" ", "\t", "  ", " \t"])
COMMENT = st.sampled_from(
    ["/* c */", "/**/", "/* a\n b */", "/* a\n * b\n */", "// c", "// c \\", "//", "/* // */",
     "// a /* b", "/* a */ /* b */", "/* é */", "/* a */ x"]
)  # fmt: skip
VALUE = st.sampled_from(
    ["1", "0x1234", "(1 << 3)", "x + y", '"s"', "'a'", '"/*"', "a / b", "a /", "1/", "a//b",
     "\\", "a \\", "do { f(); } while (0)", "é", "#x", "(", "a\\b", "\f1"]
)  # fmt: skip
PARAMS = st.sampled_from(
    ["", "()", "(x)", "(a, b)", "(a , ... )", "(...)", "(args...)", "(a,)", "( a )", "(a b)",
     " (x)", "(x", "(a,\\\nb)", "(/* c */ x)"]
)  # fmt: skip
CONDITION = st.sampled_from(
    ["A", "defined(A)", "defined A && B", "F(a)", "IS_ENABLED(X) || !defined(Y)", "A B", "(",
     "0", "A == 1 /* c */"]
)  # fmt: skip


KINDS = ["define", "define", "define", "ifdef", "ifndef", "if", "elif", "else", "endif",
         "include", "undef", "pragma", "error", "warning", "line", "foo", "", "definex"]  # fmt: skip


@st.composite
def directive(draw: st.DrawFn, kinds: list[str] = KINDS) -> str:
    hash_ = draw(SPACE) + "#" + draw(SPACE)
    kind = draw(st.sampled_from(kinds))
    text = hash_ + kind
    if kind.startswith("define"):
        text += draw(SOME_SPACE | SPACE) + draw(NAMES) + draw(PARAMS)
        text += draw(st.one_of(st.just(""), SOME_SPACE.flatmap(lambda s: VALUE.map(s.__add__))))
    elif kind in ("ifdef", "ifndef", "undef"):
        text += draw(SOME_SPACE) + draw(NAMES) + draw(st.sampled_from(["", " B", "\\\n"]))
    elif kind in ("if", "elif"):
        text += draw(SOME_SPACE) + draw(CONDITION)
    elif kind == "include":
        text += draw(SPACE) + draw(st.sampled_from(["<a/b.h>", '"a.h"', "FOO", "F(x)", '"a\\".h"']))
    elif kind in ("pragma", "error", "warning", "line", "foo"):
        text += draw(st.sampled_from(["", " once", " don't", " 3", " a /* b */"]))
    if draw(st.integers(0, 2)) == 0:
        text += draw(SPACE) + draw(COMMENT)
    if draw(st.integers(0, 5)) == 0:
        text += " \\\n" + draw(VALUE)
    return text + draw(st.sampled_from(["", "", "", " ", "\t", "\r"]))


# Lines most of which the recognizer takes (defines, #ifdef blocks, comments alone), with the
# edges it must judge: blanks at a line's end, slashes, backslashes, comments inside.
NEAR = st.one_of(
    *[directive(["define", "define", "ifdef", "else", "endif", "include", "undef", "pragma"])] * 6,
    SPACE,
    COMMENT,
)
LINE = st.one_of(
    directive(), directive(), directive(), SPACE, COMMENT,
    COMMENT.map(lambda c: c + " #define Q 1"), st.sampled_from(["int x;", "}", "#define IN_COMMENT 1 */"]),
)  # fmt: skip


@st.composite
def header(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(draw(st.sampled_from([LINE, NEAR, NEAR])), max_size=14))
    if draw(st.booleans()):  # an include guard around it: balanced #ifndef/#endif
        lines = ["#ifndef G_H", "#define G_H", *lines, "#endif /* G_H */"]
    newline = draw(st.sampled_from(["\n", "\r\n", "\n", "\n", "\n", "\r"]))
    text = newline.join(lines) + draw(st.sampled_from([newline, "", "\n"]))
    return text.encode("utf-8")


def _tree_sitters(source: bytes) -> object:
    with mock.patch.object(tag_parser, "defined_names", lambda _source: None):
        return TagParser(alone=True).raw("c", source, False)


@settings(max_examples=3000, deadline=None)
@given(header())
def test_what_the_recognizer_takes_is_tagged_as_tree_sitter_tags_it(source: bytes) -> None:
    mine = TagParser(alone=True).raw("c", source, False)
    assert mine == _tree_sitters(source)


PLAIN_DEFINE = st.builds(
    lambda name, params, value, comment: f"#define {name}{params}{value}{comment}",
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True),
    st.sampled_from(["", "(x)", "(a, b)"]),
    st.sampled_from([" 0x00000001L", " (x) << 3", "\t1", ""]),
    st.sampled_from(["", " /* c */", " // c"]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(PLAIN_DEFINE, st.just(""), st.just("/* a\n * b\n */")), max_size=30),
    st.sampled_from(["\n", "\r\n"]),
)
def test_a_register_header_is_taken_with_the_same_tags(lines: list[str], newline: str) -> None:
    text = newline.join(["/* licence */", "#ifndef R_H", "#define R_H", *lines, "#endif"])
    source = (text + newline).encode("ascii")
    assert defined_names(source) is not None  # the recognizer takes it, and tags it alike
    assert TagParser(alone=True).raw("c", source, False) == _tree_sitters(source)
