"""A terminal's screen (tmux `capture-pane -p -e`: text with SGR colour escapes) as an SVG image:
one monospace <text> per run of cells that share their colours. Enough SGR for Neovim: reset,
bold, reverse, the 16 colours, 256-colour and true-colour foregrounds and backgrounds."""

from __future__ import annotations

import html
import re

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
BASE = [
    "#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
]  # fmt: skip
FG, BG = "#d4d4d4", "#1e1e1e"
CELL_W, CELL_H = 8.4, 17


def _color256(n: int) -> str:
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        r, g, b = (n // 36, (n // 6) % 6, n % 6)
        return "#" + "".join(f"{0 if c == 0 else 55 + 40 * c:02x}" for c in (r, g, b))
    grey = 8 + 10 * (n - 232)
    return f"#{grey:02x}{grey:02x}{grey:02x}"


class _Pen:
    def __init__(self) -> None:
        self.fg, self.bg, self.bold, self.reverse = FG, BG, False, False

    def apply(self, codes: list[int]) -> None:
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.__init__()  # type: ignore[misc]
            elif c == 1:
                self.bold = True
            elif c == 22:
                self.bold = False
            elif c == 7:
                self.reverse = True
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37 or 90 <= c <= 97:
                self.fg = BASE[c - 30 if c < 90 else c - 82]
            elif 40 <= c <= 47 or 100 <= c <= 107:
                self.bg = BASE[c - 40 if c < 100 else c - 92]
            elif c == 39:
                self.fg = FG
            elif c == 49:
                self.bg = BG
            elif c in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    color, i = _color256(codes[i + 2]), i + 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    color = "#" + "".join(f"{v:02x}" for v in codes[i + 2 : i + 5])
                    i += 4
                else:
                    color = FG if c == 38 else BG
                if c == 38:
                    self.fg = color
                else:
                    self.bg = color
            i += 1

    def colors(self) -> tuple[str, str, bool]:
        fg, bg = (self.bg, self.fg) if self.reverse else (self.fg, self.bg)
        return fg, bg, self.bold


def screen_svg(captured: str, columns: int, title: str) -> str:
    """`captured` (capture-pane -p -e) of a `columns`-wide pane as an SVG document."""
    rows = captured.rstrip("\n").split("\n")
    width, height = columns * CELL_W + 16, len(rows) * CELL_H + 16
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">',
        f"<title>{html.escape(title)}</title>",
        "BACKGROUND",
    ]
    pen = _Pen()
    for y, row in enumerate(rows):
        x = 0
        pieces = SGR.split(row)
        for k, piece in enumerate(pieces):
            if k % 2 == 1:
                pen.apply([int(p) for p in re.split("[;:]", piece) if p] or [0])
                continue
            if not piece:
                continue
            fg, bg, bold = pen.colors()
            left, top = 8 + x * CELL_W, 8 + y * CELL_H
            if bg != BG:
                out.append(
                    f'<rect x="{left:.1f}" y="{top}" width="{len(piece) * CELL_W:.1f}" '
                    f'height="{CELL_H}" fill="{bg}"/>'
                )
            weight = ' font-weight="bold"' if bold else ""
            out.append(
                f'<text x="{left:.1f}" y="{top + 13}" fill="{fg}"{weight} xml:space="preserve">'
                f"{html.escape(piece)}</text>"
            )
            x += len(piece)
    # the screen's own background: the one its first cell was drawn on (blank cells are not sent)
    first = re.search(r'<rect x="8.0" y="8" [^>]*fill="([^"]*)"', "".join(out))
    screen = first.group(1) if first else BG
    out[out.index("BACKGROUND")] = f'<rect width="100%" height="100%" fill="{screen}" rx="6"/>'
    out.append("</svg>")
    return "\n".join(out) + "\n"
