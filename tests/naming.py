"""How test modules are named: tests/<tier>/test_<feature>_<what>.py (README, layout section).

<feature> is one of the code's feature packages (server/tokend/core/<feature>/, the same name in
service/ and lsp/) or, for what spans features, one of CROSS_CUTTING. The rule is checked by
tests/unit/test_layout_test_names.py and applied by scripts/rename_tests.py.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CROSS_CUTTING = ("cli", "clients", "daemon", "install", "layout", "protocol", "store")
"""cli: the `tokend` command as a whole; clients: the editors' plugins and tokend.client;
daemon: the processes, connections, frames and loop discipline; install: the wheel and its
install; layout: the repository's own rules (layers, size budgets, skips, these names);
protocol: the JSON-RPC/LSP wire (refusals, encoding, handler tables, conformance); store: the
SQL store, its migrations and files."""


def feature_packages(root: Path = ROOT) -> tuple[str, ...]:
    core = root / "server" / "tokend" / "core"
    return tuple(sorted(p.parent.name for p in core.glob("*/__init__.py")))


def known_names(root: Path = ROOT) -> tuple[str, ...]:
    return tuple(sorted({*feature_packages(root), *CROSS_CUTTING}))


def follows_rule(file_name: str, names: tuple[str, ...]) -> bool:
    """test_<name>.py or test_<name>_<what>.py, <name> one of `names`."""
    alternatives = "|".join(map(re.escape, names))
    pattern = rf"test_(?:{alternatives})(?:_[a-z0-9_]+)?\.py"
    return re.fullmatch(pattern, file_name) is not None


def test_modules(root: Path = ROOT) -> list[Path]:
    """Every module pytest collects under tests/ (test_*.py), as paths relative to the root."""
    return sorted(
        p.relative_to(root)
        for p in (root / "tests").rglob("test_*.py")
        if "data" not in p.relative_to(root).parts
    )


def misnamed(root: Path = ROOT) -> list[str]:
    names = known_names(root)
    return [p.as_posix() for p in test_modules(root) if not follows_rule(p.name, names)]
