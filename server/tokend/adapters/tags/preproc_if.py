"""An `#if` condition as tree-sitter's C grammar reads it (adapters.tags.preproc): names,
calls, integers, `defined` and operators; anything else, and any keyword of the grammar where a
name goes, gives up (GiveUp: the file is left to tree-sitter)."""

from __future__ import annotations

import re
from collections import Counter

_NAME = rb"[A-Za-z_][A-Za-z0-9_]*"
_TOKEN = re.compile(rb"[ \t]+|\\\r?\n|(" + _NAME + rb")|(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*(?![\w.])"
                    rb"|(\|\||&&|==|!=|<=|>=|<<|>>|[!~+\-*/%<>&|^(),])")  # fmt: skip
_UNARY = frozenset({b"!", b"~", b"-", b"+"})
_BINARY = frozenset(
    {b"||", b"&&", b"==", b"!=", b"<=", b">=", b"<<", b">>", b"+", b"-", b"*", b"/", b"%", b"<",
     b">", b"&", b"|", b"^"}
)  # fmt: skip
# Where the C grammar has a keyword (its anonymous identifier-like tokens, and its
# primitive_type's words), tree-sitter's reading of a name depends on the state: give up.
KEYWORDS = frozenset(
    b"""NULL _Alignas _Alignof _Atomic _Generic _Nonnull _Noreturn __alignof __alignof__ __asm
    __asm__ __attribute __attribute__ __based __cdecl __clrcall __declspec __except
    __extension__ __fastcall __finally __forceinline __inline __inline__ __leave __restrict__
    __stdcall __thiscall __thread __try __unaligned __vectorcall __volatile__ _alignof
    _unaligned alignas alignof asm auto break case const constexpr continue default defined do
    else end enum expression extern for goto if inline long noreturn nullptr offsetof register
    restrict return short signed sizeof static statement struct switch thread_local typedef
    union unsigned volatile while true false TRUE FALSE bool char int float double void size_t
    ssize_t ptrdiff_t intptr_t uintptr_t charptr_t nullptr_t max_align_t int8_t int16_t int32_t
    int64_t uint8_t uint16_t uint32_t uint64_t char8_t char16_t char32_t""".split()
)


class GiveUp(Exception):
    """The file is not one `scan` reads as tree-sitter does."""


def tokens(text: bytes) -> list[tuple[int, bytes]]:
    """(kind, text) of a condition: 1 a name, 2 an integer, 3 an operator."""
    out: list[tuple[int, bytes]] = []
    at = 0
    while at < len(text):
        found = _TOKEN.match(text, at)
        if found is None:
            raise GiveUp
        at = found.end()
        kind = found.lastindex
        if kind is not None:
            out.append((kind, found[kind]))
    return out


class Condition:
    """An #if condition as the grammar's preprocessor expressions read it; its calls counted."""

    def __init__(self, tokens: list[tuple[int, bytes]], calls: Counter[bytes]) -> None:
        self.tokens, self.at, self.calls = tokens, 0, calls

    def whole(self) -> None:
        if not self.tokens:
            raise GiveUp
        self.expression()
        if self.at != len(self.tokens):
            raise GiveUp

    def peek(self) -> tuple[int, bytes]:
        return self.tokens[self.at] if self.at < len(self.tokens) else (0, b"")

    def take(self, text: bytes) -> None:
        if self.peek() != (3, text):
            raise GiveUp
        self.at += 1

    def expression(self) -> None:
        self.operand()
        while self.peek()[0] == 3 and self.peek()[1] in _BINARY:
            self.at += 1
            self.operand()

    def operand(self) -> None:
        while self.peek()[0] == 3 and self.peek()[1] in _UNARY:
            self.at += 1
        kind, text = self.peek()
        self.at += 1
        if kind == 2:
            return
        if kind == 3 and text == b"(":
            self.expression()
            self.take(b")")
        elif kind == 1 and text == b"defined":
            parenthesized = self.peek() == (3, b"(")
            self.at += parenthesized
            name = self.peek()
            if name[0] != 1 or name[1] in KEYWORDS:
                raise GiveUp
            self.at += 1
            if parenthesized:
                self.take(b")")
        elif kind == 1 and text not in KEYWORDS:
            if self.peek() == (3, b"("):
                self.at += 1
                self.calls[text] += 1
                self.arguments()
        else:
            raise GiveUp

    def arguments(self) -> None:
        if self.peek() == (3, b")"):
            self.at += 1
            return
        self.expression()
        while self.peek() == (3, b","):
            self.at += 1
            self.expression()
        self.take(b")")
