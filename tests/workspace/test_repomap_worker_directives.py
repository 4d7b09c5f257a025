"""A tag worker answers a C header of preprocessor lines only (a register header: an include
guard, comments, `#define` lines) without tree-sitter's parse (issue 22: 4,375 of the kernel's
C files, 78 MB), with the answer tree-sitter's tags give; a file of code is still parsed."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from tokend.adapters import tag_workers
from tokend.adapters.tag_wire import recv, send, tags_json
from tokend.adapters.tags import TagParser
from tokend.adapters.tags import parser as tag_parser

REGISTERS = b"""/*
 * Copyright (C) 2026 Someone
 */
#ifndef _GC_9_0_OFFSET_H_
#define _GC_9_0_OFFSET_H_

// addressBlock: gc_grbmdec
#define mmGRBM_CNTL                                0x0000
#define mmGRBM_CNTL_BASE_IDX                       0
#define GRBM_CNTL__READ_TIMEOUT__SHIFT             0x0   /* the timeout */
#define REG_FIELD(reg, field) (reg##__##field##__SHIFT)
#define mmGRBM_SKEW_CNTL \\
\t0x0001

#endif
"""
CODE = b"#include <linux/types.h>\n#define N 4\nstatic int twice(int x) { return REG(x) * 2; }\n"


def _recorded_parses(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Each source handed to tree-sitter's parser from now on (the parser behind
    TagParser._parser, wrapped)."""
    parsed: list[bytes] = []
    real = TagParser._parser

    class Recording:
        def __init__(self, parser: Any) -> None:
            self.parser = parser

        def parse(self, source: Any, *rest: Any, **options: Any) -> Any:
            parsed.append(source)
            return self.parser.parse(source, *rest, **options)

    def recording(self: TagParser, language: str, grammar: Any) -> Any:
        return Recording(real(self, language, grammar))

    monkeypatch.setattr(TagParser, "_parser", recording)
    return parsed


def _worker_answers(
    monkeypatch: pytest.MonkeyPatch, batch: list[tuple[int, str, bytes]]
) -> dict[int, str]:
    sent = io.BytesIO()
    send(sent, batch)
    answers = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(sent.getvalue())))
    monkeypatch.setattr(sys, "stdout", SimpleNamespace(buffer=answers))
    monkeypatch.setattr(sys, "argv", ["tag_workers"])
    monkeypatch.setattr(tag_workers.os, "nice", lambda _n: 0)  # not this test's process
    monkeypatch.setattr(tag_workers, "_watch_parent", lambda _pid: None)
    tag_workers.main()  # the worker's loop: one batch in, then end of input
    answers.seek(0)
    frame, _retiring = recv(answers)
    return {index: text for index, text, _packed in frame}


def test_a_worker_tags_a_header_of_directives_without_parsing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch = [(0, "c", REGISTERS), (1, "c", CODE), (2, "c", REGISTERS.replace(b"\n", b"\r\n"))]
    with monkeypatch.context() as parser_only:  # the oracle: tree-sitter's tags of each
        parser_only.setattr(tag_parser, "defined_names", lambda _source: None, raising=False)
        expected = {
            i: tags_json(TagParser().tags(language, source)) for i, language, source in batch
        }
    parsed = _recorded_parses(monkeypatch)
    assert _worker_answers(monkeypatch, batch) == expected
    assert parsed == [CODE]  # main: all three parsed
    assert '"mmGRBM_CNTL"' in expected[0] and '"mmGRBM_SKEW_CNTL"' in expected[0]
