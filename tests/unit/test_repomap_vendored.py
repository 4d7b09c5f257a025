"""Vendored files (core.repomap.vendored): third-party code a repository carries, told by its
path; a text's or a file focus's rank counts a vendored file's fused score at SHARE of itself,
unless the focus is vendored. The paths are held against a list written here by hand; the rank
on a small tree shaped as syncthing's misses were (issue 24's fifteenth pass): a bundled
script that says every word of a task's text many times, beside the Go file the task is about."""

from __future__ import annotations

import zlib

import numpy as np

from tokend.core.repomap.graph import Focus, RepoGraph
from tokend.core.repomap.tags import Definition, FileTags
from tokend.core.repomap.vendored import SHARE, demoted, vendored

TEXT = "versioner: an external command that fails is reported, not an empty versioner"


def test_vendored_paths():
    paths = {
        "gui/default/vendor/angular/angular.js": True,
        "vendor/github.com/x/y/z.go": True,
        "third_party/zlib/inflate.c": True,
        "web/node_modules/react/index.js": True,
        "static/js/jquery-3.7.1.js": True,
        "static/js/app.min.js": True,
        "lib/versioner/external.go": False,
        "vendoring/plan.py": False,  # a word of the project's, not a folder of vendored code
        "src/vendor.ts": False,
        "docs/minimal.js": False,
    }
    assert vendored(list(paths)).tolist() == list(paths.values())


def _tags(words: dict[str, int], names: list[str]) -> FileTags:
    return FileTags(
        definitions=tuple(Definition(n, i, f"function {n}()") for i, n in enumerate(names)),
        words={zlib.crc32(w.encode()): c for w, c in words.items()},
    )


def _tree(bundle: str) -> dict[str, FileTags]:
    """`bundle`: a long script saying the text's words often (and defining a `command`);
    lib/versioner/external.go says them less often."""
    common = {"empty": 30, "command": 40, "external": 25, "reported": 6, "fails": 8}
    return {
        bundle: _tags({**common, "element": 300, "query": 200, "versioner": 1}, ["command"]),
        "lib/versioner/external.go": _tags(
            {"versioner": 12, "external": 9, "command": 6, "empty": 2}, ["External"]
        ),
        "lib/versioner/simple.go": _tags({"versioner": 5, "simple": 9, "keep": 4}, ["Simple"]),
        "lib/model/folder.go": _tags({"folder": 20, "pull": 9, "empty": 1}, ["Folder"]),
        "cmd/main.go": _tags({"main": 5, "flag": 7, "command": 2}, ["main"]),
    }


def _first(bundle: str, focus: Focus) -> str:
    graph = RepoGraph()
    graph.set_files(_tree(bundle))
    return graph.rank_files(focus)[0][0]


def test_a_vendored_script_is_not_a_texts_first_file():
    text = Focus(frozenset(), frozenset(), TEXT)
    # the same script at a path of the project's own leads: it says the text's words most
    assert _first("gui/default/assets/bundle.js", text) == "gui/default/assets/bundle.js"
    # vendored, the Go file leads (main c84769f: the vendored script first)
    assert _first("gui/default/vendor/bundle.js", text) == "lib/versioner/external.go"


def test_the_share_and_who_keeps_it():
    fused, flags = np.array([1.0, 2.0, 3.0]), np.array([False, True, False])
    assert demoted(fused, lambda: flags, [], "a text").tolist() == [1.0, 2.0 * SHARE, 3.0]
    assert demoted(fused, lambda: flags, [0], "").tolist() == [1.0, 2.0 * SHARE, 3.0]
    assert demoted(fused, lambda: flags, [1], "").tolist() == [1.0, 2.0, 3.0]  # focus vendored
    assert demoted(fused, lambda: flags, [], "").tolist() == [1.0, 2.0, 3.0]  # identifiers alone
