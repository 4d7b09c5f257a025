"""What the size budgets measure (issue 18: modules <= 300 lines, functions <= 60 lines, classes
<= 15 public methods), shared by the test and by `python -m tests.unit.size_budgets`, which
prints today's debt for tests/unit/data/size_debt.json."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "server"
BUDGETS = {"module lines": 300, "function lines": 60, "class public methods": 15}


def measure() -> dict[str, dict[str, int]]:
    """Every item of server/tokend over its budget, by kind: {name: size}."""
    over: dict[str, dict[str, int]] = {kind: {} for kind in BUDGETS}
    for path in sorted((ROOT / "tokend").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT).as_posix()
        lines = len(source.splitlines())
        if lines > BUDGETS["module lines"]:
            over["module lines"][rel] = lines
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > BUDGETS["function lines"]:
                    over["function lines"][f"{rel}:{node.name}"] = size
            elif isinstance(node, ast.ClassDef):
                public = [
                    b
                    for b in node.body
                    if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not b.name.startswith("_")
                ]
                if len(public) > BUDGETS["class public methods"]:
                    over["class public methods"][f"{rel}:{node.name}"] = len(public)
    return over


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2, sort_keys=True))
