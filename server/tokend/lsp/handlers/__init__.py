"""One module per feature (the names of core/ and service/: session, budget, compaction,
assembly, workspace, ...); each has a `FEATURES` table of typed top-level handlers by method
(lsp/handler_table.py), and may have `NOTIFICATIONS` (LSP notifications, lsprotocol's types) and
`connect(server)` (what the feature hears of the connection itself, e.g. its close).

`modules()` finds them all, so a new feature is one new file here, nothing else to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """Every handler module of this package, in name order (deterministic registration)."""
    found = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.ispkg)
    return [importlib.import_module(f"{__name__}.{name}") for name in found]
