"""The repo map beside aider-chat 0.86.2's RepoMap: same trees, same budgets, one run.

Trees: the sdists of flask and SQLAlchemy (`pip download --no-binary :all: --no-deps`).
Aider runs in a virtualenv of its own (AIDER_VENV, else bench/out/aider-venv, made with pip when
absent), offline: TIKTOKEN_CACHE_DIR at litellm's bundled tokenizers, LITELLM_LOCAL_MODEL_COST_MAP,
a scratch HOME, PYTHONHASHSEED=0; map_mul_no_files=1 and refresh="always" so both sides build a
map of the asked budget for every call; only the map calls are timed. Every text is counted
with o200k_base (gpt-4o, the model both sides are given).

Figures: cold (no cache, new process), warm (new process, caches on disk), after touching one
file (same process), a new focus with everything loaded (tokend: the daemon's case), and
budget adherence over 100 (focus, budget) pairs on flask: overshoots and the median fill.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
AIDER_VERSION = "0.86.2"
TREES = {"flask": "flask", "SQLAlchemy": "sqlalchemy"}
BUDGET = 4096
PAIRS = 100
REPEATS = 3


def _tree(name: str) -> Path:
    target = OUT / "trees"
    target.mkdir(parents=True, exist_ok=True)
    found = sorted(p for p in target.iterdir() if p.is_dir() and p.name.lower().startswith(name))
    if found:
        return found[-1]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
         name, "-d", str(target)], check=True)  # fmt: skip
    archive = next(p for p in target.glob(f"{name}-*.tar.gz"))
    shutil.unpack_archive(archive, target)
    return _tree(name)


def _aider_python() -> Path:
    venv = Path(os.environ.get("AIDER_VENV") or OUT / "aider-venv")
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"aider-chat=={AIDER_VERSION}"], check=True
        )
    return python


AIDER_SCRIPT = r"""
import json, sys, time
job = json.load(sys.stdin)
from aider.io import InputOutput
from aider.models import Model
from aider.repomap import RepoMap
io = InputOutput(yes=True, pretty=False)
model = Model("gpt-4o")
files = [job["root"] + "/" + p for p in job["files"]]
out = []
rm = None
for call in job["calls"]:
    if call.get("touch"):
        with open(job["root"] + "/" + call["touch"], "a") as f:
            f.write("\n# touched\n")
        out.append({"seconds": 0.0, "text": ""})  # Aider notices the mtime at its next call
        continue
    if rm is None or rm.max_map_tokens != call["budget"]:
        rm = RepoMap(map_tokens=call["budget"], root=job["root"], main_model=model, io=io,
                     map_mul_no_files=1, refresh="always")
    chat = [job["root"] + "/" + p for p in call.get("files", [])]
    started = time.perf_counter()
    text = rm.get_repo_map(chat, [f for f in files if f not in chat],
                           mentioned_fnames=set(), mentioned_idents=set(call.get("identifiers", [])))
    out.append({"seconds": time.perf_counter() - started, "text": text or ""})
print(json.dumps(out))
"""

TOKEND_SCRIPT = r"""
import json, sys, time
from pathlib import Path
job = json.load(sys.stdin)
from tokend.adapters.tokenizers import load_encoding
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex
enc = load_encoding("o200k_base")
count = lambda t: len(enc.encode_ordinary(t))
root = Path(job["root"])
index = WorkspaceIndex(root.as_uri(), root, WorkspaceCache(Path(job["cache"])), index_ports())
out = []
built = False
for call in job["calls"]:
    started = time.perf_counter()
    if call.get("touch"):
        path = root / call["touch"]
        with open(path, "a") as f:
            f.write("\n# touched\n")
        started = time.perf_counter()
        index.apply_changes([path])
        out.append({"seconds": time.perf_counter() - started, "text": ""})
        continue
    if not built:
        index.build()
        built = True
    focus = Focus(frozenset(call.get("files", [])), frozenset(call.get("identifiers", [])))
    fitted = index.tags.repo_map(focus, call["budget"], count, "o200k_base")
    out.append({"seconds": time.perf_counter() - started, "text": fitted.text})
print(json.dumps(out))
"""


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), PYTHONHASHSEED="0", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(python: Path, script: str, job: dict[str, object], env: dict[str, str]) -> list[dict]:  # type: ignore[type-arg]
    done = subprocess.run(
        [str(python), "-c", script], input=json.dumps(job), capture_output=True, text=True,
        env=env, cwd=str(job["root"]), check=False)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _litellm_tokenizers(python: Path) -> str:
    found = subprocess.run(
        [str(python), "-c", "import importlib.util as u,os;"
         "print(os.path.join(os.path.dirname(u.find_spec('litellm').origin),'litellm_core_utils','tokenizers'))"],
        capture_output=True, text=True, check=True)  # fmt: skip
    return found.stdout.strip()


def run() -> str:
    from tokend.adapters.file_index import walk
    from tokend.adapters.ignore_rules import IgnoreRules
    from tokend.adapters.tokenizers import load_encoding
    from tokend.core.workspace.fileclass import language_of

    enc = load_encoding("o200k_base")
    aider = _aider_python()
    lines = [
        "### repomap\n",
        f"tokend's repo map beside aider-chat {AIDER_VERSION}'s RepoMap (its own virtualenv, offline),",
        f"same trees and budgets; median of {REPEATS} runs, seconds of map calls only. Tokens: o200k_base.\n",
        "| tree | files | case | tokend s | Aider s | ratio |",
        "|---|---:|---|---:|---:|---:|",
    ]
    adherence: list[str] = []
    for label, name in TREES.items():
        source = _tree(name)
        work = Path(tempfile.mkdtemp(prefix="tokend-bench-repomap-"))
        home = work / "home"
        home.mkdir()
        env = _env(home)
        env["TIKTOKEN_CACHE_DIR"] = _litellm_tokenizers(aider)
        files = [e.path for e in walk(source, IgnoreRules(source)) if not e.skipped]
        code = [f for f in files if language_of(f)]
        touched = sorted(code)[len(code) // 2]
        figures: dict[str, dict[str, list[float]]] = {}
        for side, python, script in (
            ("tokend", Path(sys.executable), TOKEND_SCRIPT),
            ("aider", aider, AIDER_SCRIPT),
        ):
            for _ in range(REPEATS):
                tree = work / f"{side}-tree"
                shutil.rmtree(tree, ignore_errors=True)
                shutil.copytree(source, tree)
                cache = work / f"{side}-cache.sqlite3"
                cache.unlink(missing_ok=True)
                job = {"root": str(tree), "files": files, "cache": str(cache)}
                base = {"budget": BUDGET}
                cold = _run(python, script, {**job, "calls": [base]}, env)
                warm = _run(python, script, {**job, "calls": [base, {"touch": touched}, base,
                             {**base, "files": [code[0]], "identifiers": []}]}, env)  # fmt: skip
                got = figures.setdefault(side, {})
                got.setdefault("cold", []).append(cold[0]["seconds"])
                got.setdefault("warm (new process)", []).append(warm[0]["seconds"])
                got.setdefault("after touching one file", []).append(
                    warm[1]["seconds"] + warm[2]["seconds"]
                )
                got.setdefault("new focus, loaded", []).append(warm[3]["seconds"])
        for case in figures["tokend"]:
            ours = statistics.median(figures["tokend"][case])
            theirs = statistics.median(figures["aider"][case])
            lines.append(
                f"| {label} | {len(files)} | {case} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f} |"
            )
        if label == "flask":
            adherence = _adherence(source, work, files, code, aider, env, enc)
    return "\n".join(lines + [""] + adherence) + "\n"


def _adherence(source, work, files, code, aider, env, enc) -> list[str]:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    calls = []
    for _ in range(PAIRS):
        budget = rng.choice([256, 512, 1024, 2048, 4096, 8192])
        calls.append(
            {"budget": budget, "files": rng.sample(code, rng.randint(0, 2)), "identifiers": []}
        )
    rows = [
        "| side | pairs | over budget | median fill | worst overshoot |",
        "|---|---:|---:|---:|---:|",
    ]
    for side, python, script in (
        ("tokend", Path(sys.executable), TOKEND_SCRIPT),
        ("Aider", aider, AIDER_SCRIPT),
    ):
        tree = work / f"{side}-adherence"
        shutil.copytree(source, tree)
        job = {
            "root": str(tree),
            "files": files,
            "cache": str(work / f"{side}-adh.sqlite3"),
            "calls": calls,
        }
        results = _run(python, script, job, env)
        fills = [
            len(enc.encode_ordinary(r["text"])) / c["budget"]
            for r, c in zip(results, calls, strict=True)
        ]
        over = [f for f in fills if f > 1]
        worst = f"{(max(over) - 1) * 100:.0f}%" if over else "none"
        rows.append(
            f"| {side} | {len(fills)} | {len(over)} | {statistics.median(fills) * 100:.1f}% | {worst} |"
        )
    return [
        f"Budget adherence, flask, {PAIRS} (focus files, budget) pairs, budgets 256..8192:\n",
        *rows,
    ]


if __name__ == "__main__":
    print(run())
