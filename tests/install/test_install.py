"""tokend installed the way a user installs it, then run offline.

A wheel built by `python -m build` (sdist, then the wheel from the sdist) goes into a fresh
virtualenv (pip may fetch dependencies from the registry); the installed `tokend` then runs with no
litellm, no tiktoken cache, HOME and TMPDIR empty and every proxy variable pointing at a closed
local port, and must know gpt-4o and count exactly with the vocabularies its wheel ships. Then the
same venv gets `pip install <checkout>`, which must work too and leave nothing in the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tokend.adapters.packaged_data import CATALOG_FILE, VOCABULARIES
from tokend.adapters.tokenizers import load_encoding

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TEXT = (
    "def count(text: str) -> int:\n    return len(encoding.encode_ordinary(text))  # exact\n"
    "Das Kontextfenster ist fast voll: 167.094 Tokens. 文脈ウィンドウ 🚀 <|endoftext|>\n"
) * 40
MODELS = {"gpt-4o": "o200k_base", "gpt-4": "cl100k_base"}  # one model per shipped vocabulary
COUNT_SCRIPT = """
import json, os, sys
from tokend.adapters.catalog_source import load_catalog
from tokend.adapters.tokenizers import counter_for, find_vocabulary
text, found = sys.stdin.read(), {}
for model in sys.argv[1:]:
    tokenizer = load_catalog().get(model).tokenizer
    found[model] = {"tokenizer": tokenizer, "tokend": counter_for(tokenizer).count(text),
                    "folder": str(find_vocabulary(tokenizer))}
import tiktoken  # tiktoken's own loader, reading the vocabulary tokend found
for model, seen in found.items():
    os.environ["TIKTOKEN_CACHE_DIR"] = seen["folder"]
    seen["tiktoken"] = len(tiktoken.get_encoding(seen["tokenizer"]).encode_ordinary(text))
print(json.dumps(found))
"""


@dataclass(frozen=True)
class Venv:
    path: Path
    offline_env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """A command of this venv with no network, no litellm, no caches, in an empty folder."""
        done = subprocess.run(
            [self.bin(args[0]), *args[1:]],
            input=stdin,
            env=self.offline_env,
            cwd=self.offline_env["HOME"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
        return done


def _run(*args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _offline_env(root: Path) -> dict[str, str]:
    home, tmp = root / "home", root / "tmp"
    home.mkdir()
    tmp.mkdir()  # tiktoken's default cache, <tmp>/data-gym-cache, does not exist
    closed = "http://127.0.0.1:9"  # the discard port: any download fails at once
    env = {
        "PATH": f"{root / 'venv' / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        **{var: str(home / var.lower()) for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME")},
        **{var: str(home / var.lower()) for var in ("XDG_STATE_HOME", "XDG_CACHE_HOME")},
    }
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[var] = closed
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    _run(sys.executable, "-m", "build", "--outdir", out, ROOT)
    built = sorted(out.glob("tokend-*.whl"))
    assert len(built) == 1, built
    size = built[0].stat().st_size
    print(f"\nbuilt {built[0].name}: {size / 1e6:.2f} MB in {time.monotonic() - started:.1f} s")
    yield built[0]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    root = tmp_path_factory.mktemp("user")
    started = time.monotonic()
    _run(sys.executable, "-m", "venv", root / "venv")
    pip = [root / "venv" / "bin" / "python", "-m", "pip", "install", "-q"]
    _run(*pip, "--disable-pip-version-check", "-c", ROOT / "requirements.lock", wheel)
    print(f"installed the wheel in a new venv in {time.monotonic() - started:.1f} s")
    return Venv(root / "venv", _offline_env(root))


def test_the_wheel_ships_the_catalog_and_verified_vocabularies(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert f"tokend/data/{CATALOG_FILE}" in names
        assert "tokend/data/LICENSE.litellm" in names
        assert "tokend/adapters/store/migrations/script.py.mako" in names
        for vocabulary in VOCABULARIES.values():
            content = archive.read(f"tokend/data/tiktoken/{vocabulary.cache_file}")
            assert hashlib.sha256(content).hexdigest() == vocabulary.sha256
        catalog = json.loads(archive.read(f"tokend/data/{CATALOG_FILE}"))
    assert catalog["gpt-4o"]["max_input_tokens"] == 128_000
    assert not any(name.startswith("litellm/") for name in names)
    assert wheel.stat().st_size < 5_000_000  # the data, not litellm's whole tokenizers folder


def test_the_installed_tokend_knows_gpt_4o_offline_without_litellm(installed: Venv) -> None:
    no_litellm = (
        "import importlib.util, sys; sys.exit(importlib.util.find_spec('litellm') is not None)"
    )
    installed.run("python", "-c", no_litellm)
    shown = installed.run("tokend", "models", "show", "gpt-4o", "--json")
    figures = json.loads(shown.stdout)
    assert (figures["contextWindow"], figures["maxOutputTokens"]) == (128_000, 16_384)
    assert figures["tokenizer"] == "o200k_base"
    assert figures["prices"]["input"] == 2.5e-06


def test_the_installed_tokend_counts_exactly_with_its_packaged_vocabularies(
    installed: Venv,
) -> None:
    counted = json.loads(installed.run("python", "-c", COUNT_SCRIPT, *MODELS, stdin=TEXT).stdout)
    for model, encoding in MODELS.items():
        seen = counted[model]
        assert seen["tokenizer"] == encoding
        assert Path(seen["folder"]).parts[-3:] == ("tokend", "data", "tiktoken")
        assert str(installed.path) in seen["folder"]
        oracle = len(load_encoding(encoding).encode_ordinary(TEXT))  # this checkout's tiktoken
        assert seen["tokend"] == seen["tiktoken"] == oracle


def test_pip_install_of_the_checkout_works_and_leaves_no_build_folder(installed: Venv) -> None:
    egg_infos = {p: p.stat().st_mtime for p in ROOT.glob("server/*.egg-info")}
    _run(
        installed.bin("python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--force-reinstall",
        ROOT,
    )
    assert not (ROOT / "build").exists(), "pip install <checkout> left build/ in the checkout"
    assert not (ROOT / "dist").exists()
    assert {p: p.stat().st_mtime for p in ROOT.glob("server/*.egg-info")} == egg_infos
    shown = installed.run("tokend", "models", "show", "gpt-4o", "--json")
    assert json.loads(shown.stdout)["tokenizer"] == "o200k_base"
    counted = json.loads(installed.run("python", "-c", COUNT_SCRIPT, "gpt-4o", stdin=TEXT).stdout)
    assert counted["gpt-4o"]["tokend"] == len(load_encoding("o200k_base").encode_ordinary(TEXT))


def test_the_build_takes_the_data_from_the_litellm_version_the_checkout_uses() -> None:
    hook = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    pinned_wheel = hook["targets"]["wheel"]["hooks"]["custom"]["litellm-wheel"]
    source = (ROOT / "server" / "tokend" / "data" / "SOURCE.txt").read_text()
    assert (
        f"Taken from {pinned_wheel} " in source
    )  # scripts/bootstrap: hatch_build.py --checkout-data
