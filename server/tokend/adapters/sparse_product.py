"""SciPy's compiled CSC product (`csc_matvec` of scipy/sparse/_sparsetools) for the large
graphs' rank (core.repomap.krylov), loaded alone from its extension's file so that SciPy's
package (its Python modules, its OpenBLAS: 23-33 MiB of a daemon on the kernel, issue 22) is
not imported for it. Found by the import system's search for SciPy's folder; nothing of SciPy
is imported to find it.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

from tokend.core.repomap.krylov import Loop


@functools.cache
def compiled_product() -> Loop | None:
    """SciPy's CSC product, `csc_matvec(n_row, n_col, Ap, Ai, Ax, x, y)` (y += A x), taken from
    a SciPy already imported or else loaded alone from scipy/sparse/_sparsetools (its package's
    modules stay unloaded); None when it cannot be found or loaded."""
    loaded = sys.modules.get("scipy.sparse._sparsetools")
    if loaded is not None:
        return getattr(loaded, "csc_matvec", None)
    try:
        spec = importlib.util.find_spec("scipy")  # finds the package's folder; imports nothing
        folders = list(spec.submodule_search_locations or []) if spec else []
        for folder in folders:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(folder) / "sparse" / f"_sparsetools{suffix}"
                if path.is_file():
                    loader = importlib.machinery.ExtensionFileLoader("_sparsetools", str(path))
                    found = importlib.util.spec_from_file_location(
                        "_sparsetools", path, loader=loader
                    )
                    if found is None:
                        continue
                    module = importlib.util.module_from_spec(found)
                    loader.exec_module(module)
                    return getattr(module, "csc_matvec", None)
    except (ImportError, OSError):
        return None
    return None
