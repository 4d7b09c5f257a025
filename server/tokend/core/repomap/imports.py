"""What a file's imports reach: the files of the workspace a Python module, a relative
JavaScript/TypeScript specifier or a Go import path names (core.repomap.edges uses them to send a
reference to the definition its file imports, not to every file defining that name, and to link
a file to the modules it imports).

- Python: `.mod` / `..pkg.mod` from the file's package; an absolute `pkg.mod` by its name from
  the package root (the first folder up without an `__init__.py`), or by its whole path; a name
  of a `from m import name` is tried as the module `m.name`. A module is `m.py`, `m.pyi` or the
  package `m/__init__.py(i)`. A name more than AMBIGUOUS files carry is left unresolved.
- JavaScript/TypeScript: a relative specifier, as written, with an extension added (a `.js`
  written for a `.ts` file too), or the folder's `index` file. Bare package names are not
  resolved (node_modules is not the workspace's).
- Go: the folder of the workspace whose path is the longest tail of the import path (the
  standard library's paths, whose first part has no dot, are not looked up); a Go file also
  reaches the other files of its own folder (its package).

A re-export module (`__init__.py`, an `index` file) a file reaches passes on what it imports
itself, one step: `from pkg import Name` reaches the module of the package that defines Name.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PY_EXTS = (".py", ".pyi")
JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
AMBIGUOUS = 3


@dataclass(frozen=True, slots=True)
class PathIndex:
    """The workspace's paths as imports name them (made again only when the paths change)."""

    paths: frozenset[str]
    python: Mapping[str, tuple[str, ...]]  # dotted module name -> files
    go: Mapping[str, tuple[str, ...]]  # folder -> its .go files


def path_index(paths: Iterable[str]) -> PathIndex:
    every = frozenset(paths)
    packages = {posixpath.dirname(p) for p in every if posixpath.basename(p) in _INITS}
    python: dict[str, list[str]] = defaultdict(list)
    go: dict[str, list[str]] = defaultdict(list)
    for path in sorted(every):
        if path.endswith(PY_EXTS):
            for name in _module_names(path, packages):
                python[name].append(path)
        elif path.endswith(".go"):
            go[posixpath.dirname(path)].append(path)
    return PathIndex(
        every, {k: tuple(v) for k, v in python.items()}, {k: tuple(v) for k, v in go.items()}
    )


_INITS = ("__init__.py", "__init__.pyi")


def _module_names(path: str, packages: set[str]) -> set[str]:
    stem = path.rsplit(".", 1)[0]
    if posixpath.basename(stem) == "__init__":
        stem = posixpath.dirname(stem)
    parts = stem.split("/") if stem else []
    top = len(parts) - 1  # the first folder up that is not a package
    while top > 0 and "/".join(parts[:top]) in packages:
        top -= 1
    return {".".join(parts), ".".join(parts[top:])} - {""}


class Resolution:
    """One derivation's reading of the workspace's imports (`imports`: path -> its imports) on
    `index`: each import resolved once per folder and language (an absolute one once per
    language), each file's `reached` made once. A package's `__init__.py` that 600 files reach
    is resolved once, not 600 times (SQLAlchemy's first map: 349,509 resolutions, 1.1 s,
    before this was shared; then 9,181 per folder, now 5,575)."""

    def __init__(self, index: PathIndex, imports: Mapping[str, tuple[str, ...]]) -> None:
        self.index, self.imports = index, imports
        self._named: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}  # relative
        self._absolute: dict[str, dict[str, tuple[str, ...]]] = {}
        self._reached: dict[str, list[str]] = {}
        self._reexports: dict[str, bool] = {}
        self._names: dict[str, list[tuple[str, ...]]] = {}  # path -> what its imports name

    def named(self, path: str, specs: Iterable[str]) -> list[tuple[str, ...]]:
        """The files each of `specs`, imported by `path`, names (`path` itself among them,
        perhaps). What a relative import names hangs on the importing file's folder and
        language alone, what an absolute one names (a Python module, a Go import path; none
        for a bare JavaScript package) on its language alone: the files of one folder, and
        the files of one language, share those answers."""
        folder, kind = posixpath.dirname(path), path.rsplit(".", 1)[-1]
        here = self._named.get((folder, kind))
        if here is None:
            here = self._named[folder, kind] = {}
        anywhere = self._absolute.get(kind)
        if anywhere is None:
            anywhere = self._absolute[kind] = {}
        out = []
        for spec in specs:
            known = here if spec.startswith(".") else anywhere
            found = known.get(spec)
            if found is None:
                found = known[spec] = _resolve(path, spec, self.index)
            out.append(found)
        return out

    def reached(self, path: str) -> list[str]:
        """The files `path`'s imports name directly, and for a Go file its package's other
        files (sorted, without `path`; not to be changed by the caller)."""
        found = self._reached.get(path)
        if found is None:
            out: set[str] = set()
            named = self._names[path] = self.named(path, self.imports.get(path, ()))
            for names in named:
                out.update(names)
            if path.endswith(".go"):
                out.update(self.index.go.get(posixpath.dirname(path), ()))
            out.discard(path)
            found = self._reached[path] = sorted(out)
        return found

    def reach(self, path: str) -> list[str]:
        """`reached`, and what the re-export modules among those reach in turn (sorted)."""
        first = self.reached(path)
        out = set(first)
        for hop in first:
            passes = self._reexports.get(hop)
            if passes is None:
                passes = self._reexports[hop] = is_reexport(hop)
            if passes:
                out.update(self.reached(hop))
        out.discard(path)
        return sorted(out)

    def imported(self, path: str) -> dict[str, float]:
        """The files `path` imports, each weighing the share it has of the imports naming it
        (a Go package of 20 files: 1/20 each)."""
        out: dict[str, float] = {}
        specs = self.imports.get(path, ())
        ordered = sorted(set(specs))
        known = self._names.get(path) if ordered == list(specs) else None  # (as tags list them)
        for named in known if known is not None else self.named(path, ordered):
            if not named:
                continue
            found = [p for p in named if p != path]
            for p in found:
                out[p] = out.get(p, 0.0) + 1.0 / len(found)
        return out


def file_key(path: str) -> str:
    """What an import naming `path` ends with: a module's name, a package's (the folder of an
    `__init__.py` or an `index` file, and of a Go file)."""
    name = posixpath.basename(path)
    stem = name.rsplit(".", 1)[0]
    if path.endswith(".go") or name in _INITS or is_reexport(path):
        return posixpath.basename(posixpath.dirname(path))
    return stem


def spec_key(path: str, spec: str) -> str:
    """The file_key of every file `spec`, imported by `path`, may name."""
    if path.endswith(PY_EXTS):
        rest = spec.lstrip(".")
        if rest:
            return rest.rsplit(".", 1)[-1]
        folder = posixpath.dirname(path)
        for _ in range(len(spec) - 1):
            folder = posixpath.dirname(folder)
        return posixpath.basename(folder)
    if path.endswith(JS_EXTS):
        base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        name = posixpath.basename(base)
        stem = name.rsplit(".", 1)[0] if name.endswith(JS_EXTS) else name
        return posixpath.basename(posixpath.dirname(base)) if stem == "index" else stem
    return spec.rsplit("/", 1)[-1]


def is_reexport(path: str) -> bool:
    name = posixpath.basename(path)
    return name in _INITS or name.rsplit(".", 1)[0] == "index" and name.endswith(JS_EXTS)


def _resolve(path: str, spec: str, index: PathIndex) -> tuple[str, ...]:
    if path.endswith(PY_EXTS):
        return _python(path, spec, index)
    if path.endswith(JS_EXTS):
        return _script(path, spec, index)
    if path.endswith(".go"):
        return _go(spec, index)
    return ()


def _python(path: str, spec: str, index: PathIndex) -> tuple[str, ...]:
    rest = spec.lstrip(".")
    dots = len(spec) - len(rest)
    if not dots:
        found = index.python.get(spec, ())
        return found if len(found) <= AMBIGUOUS else ()
    folder = path  # a workspace's relative posix path: its folder is what comes before a "/"
    for _ in range(dots):
        folder = folder.rpartition("/")[0]
    rest = rest.replace(".", "/")
    base = f"{folder}/{rest}" if folder and rest else folder or rest
    inside = f"{base}/" if base else ""
    tried = (base + ".py", base + ".pyi", inside + "__init__.py", inside + "__init__.pyi")
    return tuple(p for p in tried if p in index.paths)


def _script(path: str, spec: str, index: PathIndex) -> tuple[str, ...]:
    if not spec.startswith("."):
        return ()
    base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
    stem = base.rsplit(".", 1)[0] if base.endswith(JS_EXTS) else base
    for candidate in (
        base,
        *(stem + e for e in JS_EXTS),
        *(posixpath.join(base, "index") + e for e in JS_EXTS),
    ):
        if candidate in index.paths:
            return (candidate,)
    return ()


def _go(spec: str, index: PathIndex) -> tuple[str, ...]:
    parts = spec.split("/")
    if "." not in parts[0]:
        return ()
    for i in range(len(parts)):
        found = index.go.get("/".join(parts[i:]))
        if found:
            return found
    return ()
