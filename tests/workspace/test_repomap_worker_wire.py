"""A tag worker sends each file's tags without making a FileTags or a Definition object (issue
22: making them, and turning them into lists for the JSON, was a tenth of a worker's CPU outside
tree-sitter and the words): what it sends is what the FileTags path gives, the same JSON text
and the same packed arrays."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tokend.adapters import tag_workers
from tokend.adapters.tag_wire import packed_fields, recv, send, tags_json, unpacked
from tokend.adapters.tags import TagParser
from tokend.adapters.tags import parser as tag_parser
from tokend.core.repomap.packed import PackedTags
from tokend.core.repomap.tags import FileTags

SOURCE = Path(__file__).resolve().parents[2] / "server" / "tokend" / "core" / "repomap"
C_CODE = b"""#include <linux/x.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
struct point { int x; };
typedef struct point point_t;
static int area(point_t *p) { return helper(p->x) + MAX(p->x, 2); }
int again(void);
int again(void);
"""
C_HEADER = b"#ifndef H\n#define H\n#define REG_A 0x10 /* a */\n#if KV(1) > 2\n#endif\n#endif\n"


def _work() -> list[tuple[int, str, bytes]]:
    files = sorted(SOURCE.glob("*.py"))[:12]
    work = [(i, "python", p.read_bytes()) for i, p in enumerate(files)]
    n = len(work)
    return [*work, (n, "c", C_CODE), (n + 1, "c", C_HEADER), (n + 2, "cobol", b"MOVE A TO B.")]


def _run_worker(batch: list[tuple[int, str, bytes]], monkeypatch: pytest.MonkeyPatch) -> dict:
    sent, answers = io.BytesIO(), io.BytesIO()
    send(sent, batch)
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(sent.getvalue())))
        patched.setattr(sys, "stdout", SimpleNamespace(buffer=answers))
        patched.setattr(sys, "argv", ["tag_workers"])
        patched.setattr(tag_workers.os, "nice", lambda _n: 0)  # not this test's process
        patched.setattr(tag_workers, "_watch_parent", lambda _pid: None)
        tag_workers.main()  # one batch in, then the end of its input
    answers.seek(0)
    frame, _retiring = recv(answers)  # the batch's answers in one frame
    return {index: (text, packed) for index, text, packed in frame}


def test_a_worker_sends_what_the_filetags_path_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = tag_parser.Definition

    def counted(*args: object) -> object:
        made.append(str(args[0]))
        return real(*args)  # type: ignore[arg-type]

    batch = _work()
    monkeypatch.setattr(tag_parser, "Definition", counted)
    got = _run_worker(batch, monkeypatch)
    assert made == []  # main: one Definition per definition of every file
    monkeypatch.setattr(tag_parser, "Definition", real)
    parser = TagParser()
    defined = 0
    for index, language, source in batch:
        tags = parser.tags(language, source)
        defined += len(tags.definitions)
        text, packed = got[index]
        assert text == tags_json(tags)
        assert FileTags.from_json(json.loads(text)) == tags
        want = packed_fields(tags)
        assert len(packed) == len(want)
        for sent, expected in zip(packed, want, strict=True):
            if isinstance(expected, np.ndarray):
                assert sent.dtype == expected.dtype and np.array_equal(sent, expected)
            else:
                assert sent == expected
    assert defined > 100 and parser.tags("cobol", b"x").error


def test_a_workers_answers_hold_no_numpy_array(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each answer's packed arrays travel as their bytes (a numpy array's pickle names
    numpy's reconstructor and costs five to ten times its bytes'; main: four arrays an
    answer), and the daemon's side makes the same arrays again (dtype, values) as PackedTags.of
    of the FileTags path."""
    batch = _work()
    parser = TagParser()
    for index, (_text, packed) in _run_worker(batch, monkeypatch).items():
        assert [type(field) for field in packed[:4]] == [bytes] * 4
        _light, got = unpacked(packed)
        _index, language, source = batch[index]
        want = PackedTags.of(parser.tags(language, source))
        for name in ("def_keys", "def_lines", "ref_keys", "ref_counts"):
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and np.array_equal(a, b)
