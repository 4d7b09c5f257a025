"""A fit renders each file's part of the map once (core.repomap.render): the two dozen trial
maps of SQLAlchemy's first map rendered its 462 lines again at each trial (9,021 cuts of a line,
issue 18's first map); now a file's block is made again only when its lines change. Judged by
the lines cut and by the text, written here from the map's layout."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.repomap import render
from tokend.core.repomap.render import RankedDefinition, fit_map


def _layout(chosen: Iterable[RankedDefinition], text_of: render.LineText, *_: object) -> str:
    """Files by path; each its path, its lines by number ("⋮" over a gap), an empty line."""
    chosen = list(chosen)
    out = []
    for path in sorted({d.path for d in chosen}):
        lines = sorted({d.line for d in chosen if d.path == path})
        out.append(f"{path}:")
        for i, line in enumerate(lines):
            if i and line > lines[i - 1] + 1:
                out.append("⋮")
            out.append(f"│{text_of(path, line)}")
        out.append("")
    return "\n".join(out)


def _text_of(path: str, line: int) -> str:
    return f"def f{line}():  # of {path}"


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), min_size=1, max_size=60),
    budget=st.integers(1, 4000),
)
def test_a_fit_is_the_fit_of_the_maps_layout(picks: list[tuple[int, int]], budget: int) -> None:
    ranked = [RankedDefinition(f"pkg/m{f}.py", line) for f, line in picks]
    fitted = fit_map(ranked, budget, len, _text_of)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render, "render_map", _layout)
        assert fitted == fit_map(ranked, budget, len, _text_of)


def test_a_fit_cuts_each_files_lines_once_per_change_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    draw = random.Random(18)
    ranked = [RankedDefinition(f"lib/m{i:03d}.py", draw.randrange(50)) for i in range(400)]
    cut: list[str] = []
    real = render.line_text

    def counted(raw: str) -> str:
        cut.append(raw)
        return real(raw)

    monkeypatch.setattr(render, "line_text", counted)
    fitted = fit_map(ranked, 6000, len, _text_of)
    assert 100 < fitted.definitions < 400
    # one line a file here: each block is made once, whatever the trials (main: at every
    # trial that showed it, some 20 times)
    assert len(cut) <= len({(d.path, d.line) for d in ranked[: fitted.definitions + 64]})
    monkeypatch.setattr(render, "render_map", _layout)
    assert fitted == fit_map(ranked, 6000, len, _text_of)
