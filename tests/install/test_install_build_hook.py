"""The wheel build hook (hatch_build.py) refuses data that is not what the pins say.

Fake litellm wheels made here from the real vocabulary files (the ones scripts/bootstrap takes out of the pinned wheel),
some of them tampered with; the build must stop with a message rather than ship them.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tokend.adapters.packaged_data import VOCABULARIES, packaged_vocabulary_dir

ROOT = Path(__file__).resolve().parents[2]
WHEEL_NAME = "litellm-1.109.1-cp310-abi3-manylinux_2_28_x86_64.whl"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = _load(ROOT / "hatch_build.py", "_tokend_hatch_build")
layout = hook.load_layout(ROOT / hook.LAYOUT_MODULE)


def _record_hash(content: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def _fake_wheel(
    folder: Path, members: dict[str, bytes], record: dict[str, str] | None = None
) -> Path:
    """A wheel holding `members`, its RECORD listing their hashes (or `record`'s, when given)."""
    dist_info = "litellm-1.109.1.dist-info"
    members = {
        **members,
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: litellm\nVersion: 1.109.1\n",
        f"{dist_info}/licenses/LICENSE": b"MIT License\n",
    }
    hashes = {name: _record_hash(content) for name, content in members.items()}
    hashes.update(record or {})
    rows = [f"{name},{digest},{len(members[name])}" for name, digest in hashes.items()]
    path = folder / WHEEL_NAME
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
        archive.writestr(f"{dist_info}/RECORD", "\n".join([*rows, f"{dist_info}/RECORD,,"]))
    return path


@pytest.fixture
def genuine() -> dict[str, bytes]:
    """The members tokend takes from litellm's wheel, with their real content."""
    source = packaged_vocabulary_dir()  # a checkout's copies, from the same pinned wheel
    assert source is not None, "server/tokend/data/ is missing: run scripts/bootstrap"
    members = {
        f"{layout.LITELLM_VOCABULARY_DIR}/{v.cache_file}": (source / v.cache_file).read_bytes()
        for v in VOCABULARIES.values()
    }
    members[layout.LITELLM_CATALOG] = json.dumps({"gpt-4o": {"mode": "chat"}}).encode()
    return members


def test_genuine_files_land_where_tokend_looks(tmp_path: Path, genuine: dict[str, bytes]) -> None:
    wheel = _fake_wheel(tmp_path, genuine)
    data = hook.extract_data(wheel, "abc123", layout, tmp_path / "data")
    for vocabulary in VOCABULARIES.values():
        content = (data / "tiktoken" / vocabulary.cache_file).read_bytes()
        assert hashlib.sha256(content).hexdigest() == vocabulary.sha256
    assert json.loads((data / layout.CATALOG_FILE).read_text()) == {"gpt-4o": {"mode": "chat"}}
    assert (data / "LICENSE.litellm").read_text() == "MIT License\n"
    assert WHEEL_NAME in (data / "SOURCE.txt").read_text()


def test_a_vocabulary_tiktoken_would_reject_stops_the_build(
    tmp_path: Path, genuine: dict[str, bytes]
) -> None:
    o200k = f"{layout.LITELLM_VOCABULARY_DIR}/{VOCABULARIES['o200k_base'].cache_file}"
    genuine[o200k] = genuine[o200k][:-100]  # truncated, RECORD consistent with it
    with pytest.raises(hook.DataError, match="o200k_base"):
        hook.extract_data(_fake_wheel(tmp_path, genuine), "abc123", layout, tmp_path / "data")


def test_a_file_that_does_not_match_the_wheels_record_stops_the_build(
    tmp_path: Path, genuine: dict[str, bytes]
) -> None:
    wrong = {layout.LITELLM_CATALOG: _record_hash(b"something else")}
    wheel = _fake_wheel(tmp_path, genuine, record=wrong)
    with pytest.raises(hook.DataError, match="RECORD"):
        hook.extract_data(wheel, "abc123", layout, tmp_path / "data")


def test_a_wheel_that_is_not_the_pinned_one_is_refused_by_the_download(
    tmp_path: Path, genuine: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    offered = tmp_path / "offered"
    offered.mkdir()
    _fake_wheel(offered, genuine)  # right name, wrong bytes
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip's own settings reach the download (offline build)
    monkeypatch.setenv("PIP_FIND_LINKS", str(offered))
    pinned = hashlib.sha256(b"the real wheel").hexdigest()
    download = tmp_path / "download"
    download.mkdir()
    with pytest.raises(hook.DataError, match="could not fetch") as refused:
        hook.download_pinned_wheel(WHEEL_NAME, pinned, download)
    assert "DO NOT MATCH THE HASHES" in str(refused.value)  # pip found it, and refused it
    assert not (download / WHEEL_NAME).exists()
