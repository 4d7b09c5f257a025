"""One module per method group; each has `register(server)` adding its features.

`modules()` finds them all, so a new method group is one new file here, nothing else to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """Every handler module of this package, in name order (deterministic registration)."""
    found = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.ispkg)
    return [importlib.import_module(f"{__name__}.{name}") for name in found]
