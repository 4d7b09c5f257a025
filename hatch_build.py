"""Wheel build hook: puts tokend's offline data (model catalog, tiktoken vocabularies) in the wheel.

tokend counts and prices offline, with the files litellm's wheel ships: its model catalog and
tiktoken's vocabulary files. Depending on litellm for them would install a 41 MB wheel and its
dozens of dependencies that tokend never imports, so instead the wheel build downloads one pinned
litellm wheel with pip (no dependencies; pin and sha256 in pyproject.toml,
[tool.hatch.build.targets.wheel.hooks.custom]), checks it, takes the files out and adds them to the
wheel as tokend/data/ (layout: server/tokend/adapters/packaged_data.py). Each vocabulary is checked
against the sha256 tiktoken expects, every file against the litellm wheel's RECORD.

Editable installs skip this: a checkout gets the same files in server/tokend/data/ (ignored by git)
from `python hatch_build.py --checkout-data`, which scripts/bootstrap runs: the same pinned wheel,
the same checks, so a checkout never installs litellm (189 MB with its dependencies) for two files.
For an offline build, put the litellm wheel in a folder and set PIP_NO_INDEX=1 and
PIP_FIND_LINKS to that folder: pip's own settings apply to the download.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

LAYOUT_MODULE = "server/tokend/adapters/packaged_data.py"


class DataError(RuntimeError):
    """The pinned litellm wheel could not be had, or is not what the pin says."""


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        self._workdir = Path(tempfile.mkdtemp(prefix="tokend-build-"))
        try:
            pinned, sha256 = self.config["litellm-wheel"], self.config["litellm-wheel-sha256"]
            wheel = download_pinned_wheel(pinned, sha256, self._workdir)
            layout = load_layout(Path(self.root) / LAYOUT_MODULE)
            data = extract_data(wheel, sha256, layout, self._workdir / "data")
        except BaseException:
            shutil.rmtree(self._workdir, ignore_errors=True)
            raise
        build_data["force_include"][str(data)] = f"tokend/{layout.DATA_DIR}"
        files = sum(1 for f in data.rglob("*") if f.is_file())
        self.app.display_info(f"tokend data: {files} files from {wheel.name}")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        workdir = getattr(self, "_workdir", None)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


def checkout_data(root: Path) -> Path:
    """server/tokend/data/ of a source checkout, from the wheel pyproject.toml pins (kept when
    it already came from that wheel): where an editable install finds the catalog and the
    vocabularies, as an installed wheel finds its own tokend/data/."""
    import tomllib

    pins = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    pinned = pins["targets"]["wheel"]["hooks"]["custom"]
    filename, sha256 = pinned["litellm-wheel"], pinned["litellm-wheel-sha256"]
    layout = load_layout(root / LAYOUT_MODULE)
    target = root / "server" / "tokend" / layout.DATA_DIR
    source = target / "SOURCE.txt"
    if source.is_file() and f"{filename} (sha256 {sha256})" in source.read_text():
        return target
    with tempfile.TemporaryDirectory(prefix="tokend-data-") as work:
        wheel = download_pinned_wheel(filename, sha256, Path(work))
        fresh = extract_data(wheel, sha256, layout, Path(work) / "data")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(fresh, target)
    return target


def load_layout(path: Path) -> ModuleType:
    """tokend's packaged_data module, loaded by path (tokend is not installed while it builds)."""
    spec = importlib.util.spec_from_file_location("_tokend_packaged_data", path)
    if spec is None or spec.loader is None:
        raise DataError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def download_pinned_wheel(filename: str, sha256: str, folder: Path) -> Path:
    """The wheel `filename` (name-version-python-abi-platform.whl), fetched by pip and checked."""
    name, version, python_tag, abi, platform = filename.removesuffix(".whl").split("-")
    pin = folder / "pin.txt"
    pin.write_text(f"{name}=={version} --hash=sha256:{sha256}\n")
    command = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
        "--only-binary=:all:", "--require-hashes", "--implementation", python_tag[:2],
        "--python-version", python_tag[2:], "--abi", abi, "--platform", platform,
        "--dest", str(folder), "-r", str(pin),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheel = folder / filename
    if done.returncode != 0 or not wheel.is_file():
        raise DataError(
            f"tokend's wheel ships litellm's model catalog and tiktoken vocabularies, taken from "
            f"{filename}, and pip could not fetch it (for an offline build, put that wheel in a "
            f"folder and set PIP_NO_INDEX=1 PIP_FIND_LINKS=<folder>):\n{done.stdout}{done.stderr}"
        )
    if _sha256(wheel.read_bytes()) != sha256:
        raise DataError(f"{filename}: sha256 is not the pinned {sha256}")
    return wheel


def extract_data(wheel: Path, wheel_sha256: str, layout: ModuleType, out: Path) -> Path:
    """Write tokend/data/ (catalog, vocabularies, SOURCE.txt, LICENSE.litellm) into `out`."""
    (out / layout.VOCABULARY_DIR).mkdir(parents=True)
    with zipfile.ZipFile(wheel) as archive:
        record = _record(archive)
        catalog = _member(archive, record, layout.LITELLM_CATALOG)
        if not isinstance(json.loads(catalog), dict):
            raise DataError(f"{layout.LITELLM_CATALOG} in {wheel.name} is not a JSON object")
        (out / layout.CATALOG_FILE).write_bytes(catalog)
        for encoding, vocabulary in layout.VOCABULARIES.items():
            member = f"{layout.LITELLM_VOCABULARY_DIR}/{vocabulary.cache_file}"
            content = _member(archive, record, member)
            if _sha256(content) != vocabulary.sha256:
                raise DataError(f"{member} ({encoding}): sha256 is not the one tiktoken expects")
            (out / layout.VOCABULARY_DIR / vocabulary.cache_file).write_bytes(content)
        licence = next(n for n in record if n.endswith(".dist-info/licenses/LICENSE"))
        (out / "LICENSE.litellm").write_bytes(_member(archive, record, licence))
    (out / "SOURCE.txt").write_text(
        f"Taken from {wheel.name} (sha256 {wheel_sha256}) by tokend's wheel build.\n"
        f"{layout.CATALOG_FILE}: litellm's model catalog (MIT licence: LICENSE.litellm).\n"
        f"{layout.VOCABULARY_DIR}/: tiktoken's vocabulary files ("
        + ", ".join(sorted(layout.VOCABULARIES))
        + "), named as tiktoken caches them.\n"
    )
    return out


def _record(archive: zipfile.ZipFile) -> dict[str, str]:
    """Member name -> its RECORD hash ("sha256=<urlsafe base64>") in a wheel."""
    name = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
    rows = (line.split(",") for line in archive.read(name).decode().splitlines() if line)
    return {row[0]: row[1] for row in rows if len(row) >= 2}


def _member(archive: zipfile.ZipFile, record: dict[str, str], name: str) -> bytes:
    content = archive.read(name)
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
    if record.get(name) != f"sha256={digest}":
        raise DataError(f"{name}: its hash is not the one the wheel's RECORD lists")
    return content


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


if __name__ == "__main__":
    if sys.argv[1:] != ["--checkout-data"]:
        sys.exit("usage: python hatch_build.py --checkout-data")
    try:
        print(f"tokend data: {checkout_data(Path(__file__).resolve().parent)}", file=sys.stderr)
    except DataError as exc:
        sys.exit(f"tokend data: {exc}")
