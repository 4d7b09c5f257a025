"""Through the real daemon and its tag workers: a C header of directives only (CRLF, a
continued #define) is in the first map with its #defines, each shown at its own line of the file
on disk (the map reads the line a definition's tags name)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.real_daemon import Daemons, real_daemons
from tests.lsp_client import LspClient
from tokend.adapters.tag_workers import POOL_MIN_FILES
from tokend.daemon import paths


@pytest.fixture
def daemons(monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemons]:
    with real_daemons(monkeypatch) as running:
        yield running


def test_a_directives_only_header_is_mapped_at_its_lines(daemons: Daemons, tmp_path: Path) -> None:
    tag = "R" + os.urandom(6).hex().upper()  # tags are cached by content in a shared cache
    header = (
        f"/* SPDX-License-Identifier: GPL-2.0 */\r\n#ifndef {tag}_H\r\n#define {tag}_H\r\n\r\n"
        f"#define {tag}_BASE \\\r\n\t0x1000\r\n"
        f"/* the control register,\r\n * on its own line */\r\n"
        f"#define {tag}_CTRL ({tag}_BASE + 0x4) /* ctrl */\r\n"
        f"#if IS_ENABLED(CONFIG_{tag})\r\n#define {tag}_READ(x) ((x) & 0xff)\r\n#endif\r\n"
        f"#endif /* {tag}_H */\r\n"
    )
    (tmp_path / "regs.h").write_bytes(header.encode())
    (tmp_path / "main.c").write_text(
        f'#include "regs.h"\nint start(void) {{ return {tag}_READ({tag}_CTRL); }}\n'
    )
    for i in range(POOL_MIN_FILES):  # a first build the daemon gives its tag workers
        (tmp_path / f"m{i}.c").write_text(f"int f_{tag}_{i}(void) {{ return {i}; }}\n")
    daemons.serve()
    editor = LspClient.unix(paths.socket_path())
    assert "result" in editor.initialize("editor")
    params = {"model": "gpt-4o", "workspaceUri": tmp_path.as_uri()}
    session = editor.request("session/create", params)["result"]["sessionId"]
    names = [f"{tag}_BASE", f"{tag}_CTRL", f"{tag}_READ"]
    got = editor.request(
        "repoMap/get",
        {"sessionId": session, "budgetTokens": 2048,
         "focus": {"files": [], "identifiers": names}},
        timeout=120,
    )["result"]  # fmt: skip
    editor.close()
    lines = header.split("\r\n")
    shown = got["text"].split("regs.h:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.lstrip("│").rstrip() for line in shown if line != "⋮"] == [
        lines[4],  # the name's line (its value is on the next)
        lines[8],
        lines[10],
    ]
    assert got["files"][0]["path"] == "regs.h"
