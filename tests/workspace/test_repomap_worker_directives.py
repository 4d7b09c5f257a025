"""A tag worker answers a C header of preprocessor lines only (a register header: an include
guard, comments, `#define` lines) without tree-sitter's parse (issue 22: 4,375 of the kernel's
C files, 78 MB), with the answer tree-sitter's tags give; a file of code is still parsed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tag_worker_loop import worker_answers
from tokend.adapters.tag_wire import tags_json
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
    assert worker_answers(monkeypatch, batch) == expected
    assert parsed == [CODE]  # main: all three parsed
    assert '"mmGRBM_CNTL"' in expected[0] and '"mmGRBM_SKEW_CNTL"' in expected[0]
