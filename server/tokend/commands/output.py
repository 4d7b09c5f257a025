"""The CLI's terminal output: aligned tables, counted nouns, JSON, colour on a TTY only.

rich renders; on a terminal it uses colour and the terminal's width, otherwise (a pipe, a file,
or NO_COLOR set) it writes plain text that is never wrapped, so scripts can cut columns.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

PLAIN_WIDTH = 10_000  # columns when not a terminal: tables are never wrapped or cut
CUT_MIN_WIDTH = 12  # a shrinking column (titles, folders) keeps at least this many
COLUMN_GAP = 2

Cell = str | Text  # a Text carries its style; plain strings are never read as markup


@dataclass(frozen=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"
    style: str | None = None
    cut: bool = False  # may end in "…" on a narrow terminal (titles); never when not a TTY


def console(out: TextIO) -> Console:
    """A console on `out`: styled only on a TTY and only without NO_COLOR."""
    tty = out.isatty()
    plain = not tty or os.environ.get("NO_COLOR", "") != ""
    return Console(
        file=out,
        force_terminal=not plain,  # plain: no escape codes at all, bold neither
        no_color=plain,
        width=None if tty else PLAIN_WIDTH,
        highlight=False,
        markup=False,
        emoji=False,
    )


def write_table(out: TextIO, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> None:
    """Columns two spaces apart, a bold header, no borders, no trailing blanks. On a narrow
    terminal the widest `cut` column loses characters first, down to CUT_MIN_WIDTH; the others
    keep their whole values and no column is left out (lines get longer than the terminal)."""
    target = console(out)
    cells = [[cell if isinstance(cell, Text) else Text(cell) for cell in row] for row in rows]
    widths = [
        max([cell_len(column.header), *(row[index].cell_len for row in cells)])
        for index, column in enumerate(columns)
    ]
    excess = sum(widths) + COLUMN_GAP * (len(columns) - 1) - target.width
    while excess > 0:
        cuttable = [i for i, c in enumerate(columns) if c.cut and widths[i] > CUT_MIN_WIDTH]
        if not cuttable:
            break
        widths[max(cuttable, key=lambda i: widths[i])] -= 1
        excess -= 1
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column, width in zip(columns, widths, strict=True):
        table.add_column(
            column.header,
            justify=column.justify,
            style=column.style,
            no_wrap=True,
            min_width=width,
            max_width=width,
        )
    for row in cells:
        for cell, width in zip(row, widths, strict=True):
            cell.truncate(width, overflow="ellipsis")
        table.add_row(*row)
    target.width = max(target.width, sum(widths) + COLUMN_GAP * (len(columns) - 1))
    with target.capture() as captured:
        target.print(table)
    out.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def say(out: TextIO, text: str, style: str | None = None) -> None:
    """One line of text, in `style` on a TTY."""
    console(out).print(Text(text, style=style or ""), soft_wrap=True)


def write_json(out: TextIO, value: Any) -> None:
    out.write(json.dumps(value, indent=2) + "\n")


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """E.g. "1 session", "2 sessions", "1,204 messages"."""
    return f"{count:,} {noun if count == 1 else plural_noun or noun + 's'}"


def counted(*items: tuple[int, str]) -> str:
    """E.g. "3 messages, 1 provider call and 0 compactions"."""
    words = [plural(n, noun) for n, noun in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def percent_style(used_percentage: float) -> str:
    """Green, then yellow from 75% of the window, red from 90%."""
    if used_percentage >= 90:
        return "red"
    return "yellow" if used_percentage >= 75 else "green"
