"""Test modules are named after their feature: tests/<tier>/test_<feature>_<what>.py, <feature> a
feature package of the code (server/tokend/core/<feature>/) or one of the few cross-cutting names
(tests/naming.py's CROSS_CUTTING), which the README's layout section lists. Oracles: the files on
disk, the core's package folders, the README's text."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT, SERIAL
from tests.naming import CROSS_CUTTING, feature_packages, follows_rule, known_names, misnamed


def test_every_test_module_starts_with_a_feature_or_a_cross_cutting_name() -> None:
    assert misnamed() == [], (
        "name these after the feature they test, tests/<tier>/test_<feature>_<what>.py, "
        f"<feature> one of {', '.join(known_names())} (README, layout section)"
    )


def test_the_rule_refuses_a_module_named_after_anything_else(tmp_path: Path) -> None:
    (tmp_path / "server" / "tokend" / "core" / "budget").mkdir(parents=True)
    (tmp_path / "server" / "tokend" / "core" / "budget" / "__init__.py").write_text("")
    unit = tmp_path / "tests" / "unit"
    unit.mkdir(parents=True)
    for name in ("test_budget.py", "test_budget_limits.py", "test_daemon_paths.py"):
        (unit / name).write_text("")
    for name in ("test_limits.py", "test_budgets.py", "test_budgetary.py", "test_Budget_x.py"):
        (unit / name).write_text("")
    (tmp_path / "tests" / "unit" / "data").mkdir()
    (tmp_path / "tests" / "unit" / "data" / "test_fixture.py").write_text("")
    assert misnamed(tmp_path) == [
        "tests/unit/test_Budget_x.py",
        "tests/unit/test_budgetary.py",
        "tests/unit/test_budgets.py",
        "tests/unit/test_limits.py",
    ]


def test_the_features_are_the_core_packages() -> None:
    folders = sorted(
        p.name
        for p in (ROOT / "server" / "tokend" / "core").iterdir()
        if (p / "__init__.py").exists()
    )
    assert list(feature_packages()) == folders
    assert {"session", "counting", "budget", "compaction", "repomap", "workspace"} <= set(folders)
    assert not set(CROSS_CUTTING) & set(folders)
    assert follows_rule("test_repomap_rank.py", known_names())
    assert not follows_rule("test_rank.py", known_names())


def test_the_readme_names_the_cross_cutting_names() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = " ".join(
        readme.split("<!-- test names -->")[1].split("<!-- end of test names -->")[0].split()
    )
    listed = line.split("spans features, one of ")[1].split(";")[0]
    assert sorted(re.findall(r"`([a-z]+)`", listed)) == sorted(CROSS_CUTTING)


def test_the_serial_list_names_modules_that_exist() -> None:
    """A renamed module left in SERIAL would silently run on two workers with the others."""
    assert [path for path in SERIAL if not (ROOT / path).is_file()] == []
