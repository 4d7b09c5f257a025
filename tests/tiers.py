"""The pyramid's figure, kept by every run: each test's tier and the time it took, summed per tier
at the end of the run (and each test's tier in a --junitxml file, as the property `tier`).

- `process`: the test started a tokend process (`python -m tokend ...`, `tokend lsp`'s
  forwarder, the daemon tests' fixture daemon) or an editor;
- `in-process`: it spoke to tokend's server inside the test's process (tests/in_process.py);
- `unit/service`: neither (core, adapters, the service on a real SQLite file).

Processes tokend starts itself (tag workers) do not make a test a process test.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

_spawned: list[list[str]] = []
_durations: dict[str, float] = defaultdict(float)
_tier_of: dict[str, str] = {}
_original_init = subprocess.Popen.__init__


def _noting_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
    argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
    _spawned.append(argv)
    _original_init(self, args, *rest, **kwargs)


def _starts_tokend(argv: list[str]) -> bool:
    modules = {argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-m"}
    return bool(
        modules & {"tokend", "tokend.daemon.forwarder"}
        or any(a.endswith(("fixture_daemon.py", "/tokend", "nvim", "code-server")) for a in argv)
    )


def install() -> None:
    subprocess.Popen.__init__ = _noting_init  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _spawned.clear()
    _in_process_before[0] = _in_process_starts()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    if call.when == "teardown":  # before its report is made: the report carries the tier
        if any(_starts_tokend(argv) for argv in _spawned):
            tier = "process"
        elif _in_process_starts() > _in_process_before[0]:
            tier = "in-process"
        else:
            tier = "unit/service"
        item.user_properties.append(("tier", tier))
    return (yield)


_in_process_before = [0]


def _in_process_starts() -> int:
    module = sys.modules.get("tests.in_process")
    return int(module.STARTS[0]) if module is not None else 0


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the run's own process (xdist's controller too): the durations and the tier."""
    _durations[report.nodeid] += report.duration
    for name, value in report.user_properties:
        if name == "tier":
            _tier_of[report.nodeid] = str(value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _tier_of:
        return
    tests: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for nodeid, tier in _tier_of.items():
        tests[tier] += 1
        seconds[tier] += _durations[nodeid]
    total = sum(seconds.values()) or 1.0
    terminalreporter.write_sep("=", "tests and their time per tier (setup + call + teardown)")
    for tier in ("unit/service", "in-process", "process"):
        terminalreporter.write_line(
            f"{tier:>13}: {tests[tier]:5d} tests {seconds[tier]:9.1f} s "
            f"({100 * seconds[tier] / total:4.1f}% of the time)"
        )
