"""The trivial baselines of the repo map's evaluation (bench.repomap_eval): same folder, the
import graph, BM25 over each file's whole text and git's co-change alone, each a ranking of the
tree's files."""

from __future__ import annotations

import math
import os
import re
from collections import Counter, defaultdict, deque
from pathlib import Path, PurePosixPath


def same_folder(focus: str, files: list[str]) -> list[str]:
    """Files nearest the focus in the folder tree first (its folder, then its parent's ...),
    alphabetically within a distance."""
    home = PurePosixPath(focus).parent.parts

    def distance(path: str) -> tuple[int, str]:
        parts = PurePosixPath(path).parent.parts
        common = 0
        for a, b in zip(home, parts, strict=False):
            if a != b:
                break
            common += 1
        return (len(home) - common, path)

    return sorted((f for f in files if f != focus), key=distance)


_PY_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w*, ()]+)|import\s+([\w., ]+))",
                        re.M)  # fmt: skip
_JS_IMPORT = re.compile(r"""(?:from|import|require\(|import\()\s*['"](\.{1,2}/[^'"]+)['"]""")
_GO_IMPORT = re.compile(r'"([\w.\-/]+)"')
_GO_BLOCK = re.compile(r"^import\s*(?:\(([^)]*)\)|([^\n]*))", re.M)
_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


def import_graph(root: Path, files: list[str]) -> dict[str, set[str]]:
    """Undirected file graph of resolved imports (Python modules, relative JS/TS specifiers,
    Go packages of the module named by go.mod)."""
    known = set(files)
    by_suffix: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if f.endswith(".py"):
            mod = f[:-3].removesuffix("/__init__")
            parts = mod.split("/")
            for i in range(len(parts)):
                by_suffix[".".join(parts[i:])].append(f)
    go_module = _go_modules(root)
    go_dirs: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if f.endswith(".go"):
            go_dirs[str(PurePosixPath(f).parent)].append(f)
    edges: dict[str, set[str]] = defaultdict(set)
    for f in files:
        try:
            text = (root / f).read_text("utf-8", "replace")
        except OSError:
            continue
        for target in _imports_of(f, text, known, by_suffix, go_module, go_dirs):
            if target != f:
                edges[f].add(target)
                edges[target].add(f)
    return edges


def _go_modules(root: Path) -> list[tuple[str, str]]:
    found = []
    for mod in sorted(root.rglob("go.mod")):
        m = re.search(r"^module\s+(\S+)", mod.read_text("utf-8", "replace"), re.M)
        if m:
            folder = mod.parent.relative_to(root).as_posix()
            found.append((m.group(1), "" if folder == "." else folder))
    return found


def _imports_of(  # noqa: C901  # one branch per language
    path: str,
    text: str,
    known: set[str],
    by_suffix: dict[str, list[str]],
    go_module: list[tuple[str, str]],
    go_dirs: dict[str, list[str]],
) -> set[str]:
    out: set[str] = set()
    if path.endswith((".py", ".pyi")):
        package = PurePosixPath(path).parent.parts
        for m in _PY_IMPORT.finditer(text):
            if m.group(3):
                names = [n.strip().split(" ")[0] for n in m.group(3).split(",")]
            else:
                base = m.group(1)
                dots = len(base) - len(base.lstrip("."))
                base = base.lstrip(".")
                if dots:
                    up = package[: len(package) - (dots - 1)] if dots > 1 else package
                    base = ".".join([*up, base] if base else up)
                subs = re.findall(r"\w+", m.group(2))
                names = [base] + [f"{base}.{s}" if base else s for s in subs]
            for name in names:
                out.update(by_suffix.get(name, [])[:1] if name else [])
    elif path.endswith(_JS_EXTS):
        folder = PurePosixPath(path).parent
        for spec in _JS_IMPORT.findall(text):
            base = os.path.normpath(str(folder / spec))
            stem = re.sub(r"\.(js|mjs|cjs|jsx)$", "", base)
            for candidate in (base, *(s + e for s in (stem, stem + "/index") for e in _JS_EXTS)):
                if candidate in known:
                    out.add(candidate)
                    break
    elif path.endswith(".go"):
        for block in _GO_BLOCK.finditer(text):
            for spec in _GO_IMPORT.findall(block.group(1) or block.group(2) or ""):
                for module, folder in go_module:
                    if spec == module or spec.startswith(module + "/"):
                        rel = spec[len(module) :].lstrip("/")
                        out.update(go_dirs.get(str(PurePosixPath(folder, rel)) or ".", []))
    return out


def import_ranking(focus: str, files: list[str], graph: dict[str, set[str]]) -> list[str]:
    """Files by hops from the focus in the import graph (nearest first, then by path); files
    it does not reach after, by path."""
    hops = {focus: 0}
    todo = deque([focus])
    while todo:
        at = todo.popleft()
        for nxt in sorted(graph.get(at, ())):
            if nxt not in hops:
                hops[nxt] = hops[at] + 1
                todo.append(nxt)
    far = 1 << 30
    return sorted((f for f in files if f != focus), key=lambda f: (hops.get(f, far), f))


def cochange_ranking(focus: str, files: list[str], commits: list[list[str]]) -> list[str]:
    """Files by the commits that changed them with the focus (a commit of n of `files`, 2 to
    12, gives each 1 / (n - 1)), then the rest, each by path: the history alone (`commits`:
    bench.repomap_eval_data.history_commits, the history tokend's index reads)."""
    known, score = set(files), Counter[str]()
    for changed in commits:
        mine = sorted(set(changed) & known)
        if focus in mine and 2 <= len(mine) <= 12:
            for other in mine:
                if other != focus:
                    score[other] += 1.0 / (len(mine) - 1)
    return sorted((f for f in files if f != focus), key=lambda f: (-score[f], f))


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over each file's identifiers and path words."""

    def __init__(self, root: Path, files: list[str]) -> None:
        self.files = files
        self.docs: list[Counter[str]] = []
        for f in files:
            try:
                text = (root / f).read_text("utf-8", "replace")
            except OSError:
                text = ""
            words = Counter(w.lower() for w in _WORD.findall(text))
            words.update(w.lower() for w in _WORD.findall(f))
            self.docs.append(words)
        self.avg = sum(sum(d.values()) for d in self.docs) / max(1, len(self.docs))
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def scores(self, query: str) -> list[float]:
        """Each file's score (in `files` order) against the query's words (each once)."""
        terms = sorted({w.lower() for w in _WORD.findall(query)})
        out = []
        for d in self.docs:
            length = sum(d.values())
            s = 0.0
            for t in terms:
                tf = d.get(t, 0)
                if tf:
                    s += self.idf[t] * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / self.avg))
            out.append(s)
        return out

    def ranking(self, query: str, exclude: str | None = None) -> list[str]:
        scored = zip(self.scores(query), self.files, strict=True)
        return [f for _, f in sorted((-s, f) for s, f in scored if f != exclude)]
