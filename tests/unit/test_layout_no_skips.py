"""The suite never skips for missing data or tools: a test that cannot run FAILS and says why
(tests/conftest.py's session_file, pytest.fail). Only a skip on a platform where the behaviour
does not exist is allowed: `pytest.mark.skipif(<a sys.platform test>, ...)`."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SKIPPING = {"skip", "skipif", "importorskip", "xfail"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _is_platform_skip(node: ast.Attribute, parents: dict[ast.AST, ast.AST]) -> bool:
    call = parents.get(node)
    if node.attr != "skipif" or not isinstance(call, ast.Call) or not call.args:
        return False
    return "sys.platform" in ast.unparse(call.args[0])


def skips_in(source: str) -> list[int]:
    """Lines of `source` that skip (or expect failure) other than on a platform test."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in SKIPPING
        and _dotted(node.value) in ("pytest", "pytest.mark", "unittest")
        and not _is_platform_skip(node, parents)
    )


def test_the_checker_sees_each_way_to_skip() -> None:
    source = (
        "import pytest, sys, unittest\n"
        "pytest.skip('no data')\n"
        "mod = pytest.importorskip('numpy')\n"
        "@pytest.mark.skipif(not DATA.exists(), reason='no data')\n"
        "def a(): ...\n"
        "@pytest.mark.xfail\n"
        "def b(): ...\n"
        "@unittest.skip('later')\n"
        "def c(): ...\n"
        "@pytest.mark.skipif(sys.platform == 'win32', reason='no unix sockets')\n"
        "def d(): ...\n"
        "plan.skipped_reason, outcome.skip  # names, not pytest's\n"
    )
    assert skips_in(source) == [2, 3, 4, 6, 8]


def test_no_test_skips_but_for_its_platform() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in skips_in(path.read_text(encoding="utf-8"))
    ]
    assert not found, "a test skips instead of failing with the reason (pytest.fail): " + ", ".join(
        found
    )
