"""Vendored files: third-party code a repository carries beside its own (a `vendor/` or
`third_party/` folder, `node_modules/`, a bundled jQuery, a minified script), as GitHub's
linguist tells them by their paths. A long vendored script says most words a task's text can
say and defines thousands of names, so BM25 over names and words puts it first for many texts
(issue 24's fifteenth pass: 17 of the thirty tuning trees' text queries had a vendored file
first, syncthing's `gui/default/vendor/angular/angular.js` and `jquery-3.7.1.js` among them);
its fused score counts SHARE of itself unless the focus is itself vendored."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

Array = Any
SHARE = 0.5  # bench: the thirty's text mean of R@1..10 0.4374 -> 0.4407 (0: 0.4409), file 0.4277
_VENDORED = re.compile(
    r"(^|/)(vendor|vendored|third_party|thirdparty|node_modules|bower_components)/"
    r"|(^|/)jquery[^/]*\.js$|\.min\.(js|css)$"
)


def vendored(paths: list[str]) -> Array:
    """Whether each path is a vendored file's (bool)."""
    return np.fromiter((bool(_VENDORED.search(p)) for p in paths), dtype=bool, count=len(paths))


def demoted(fused: Array, flags_of: Callable[[], Array], focus_rows: list[int], text: str) -> Array:
    """The fused scores of a text's or a file focus's rank (no other focus reads the paths'
    flags, `flags_of`) with each vendored file's at SHARE, unless a focus file is vendored."""
    if not (focus_rows or text):
        return fused
    flags = flags_of()
    if not flags.any() or (focus_rows and flags[focus_rows].any()):
        return fused
    return np.where(flags, fused * SHARE, fused)
