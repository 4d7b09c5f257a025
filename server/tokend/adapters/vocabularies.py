"""Where tiktoken's vocabularies are found on this machine (no network): see tokenizers.py."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from tokend.adapters.packaged_data import VOCABULARIES, packaged_vocabulary_dir
from tokend.core.errors import TokenizerUnavailable

log = logging.getLogger(__name__)

_FIX_HINT = (
    "Counting for models that use {encoding} fails (TokenizerUnavailable) until a copy is found: "
    "reinstall tokend from its wheel or sdist (pip install / pipx install), which ships it in "
    "tokend/data/, or set TIKTOKEN_CACHE_DIR to a folder holding tiktoken's cached vocabulary file "
    "{file} (sha256 {sha}); in a source checkout, run scripts/bootstrap."
)


def vocabulary_search_dirs() -> list[Path]:
    """The folders searched for a vocabulary, in order (only those that are set)."""
    dirs: list[Path] = []
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        value = os.environ.get(var)
        if value:
            dirs.append(Path(value))
    dirs.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    packaged = packaged_vocabulary_dir()
    if packaged is not None:
        dirs.append(packaged)
    return dirs


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def find_vocabulary(encoding_name: str) -> Path:
    """The folder holding a verified copy of `encoding_name`'s vocabulary.

    Raises TokenizerUnavailable (saying how to fix it) when no folder has an intact copy."""
    vocab = VOCABULARIES.get(encoding_name)
    if vocab is None:
        raise TokenizerUnavailable(
            f"Unknown tokenizer {encoding_name!r}; known: {', '.join(sorted(VOCABULARIES))}.",
            {"tokenizer": encoding_name},
        )
    searched = vocabulary_search_dirs()
    for folder in searched:
        candidate = folder / vocab.cache_file
        if not candidate.is_file():
            continue
        try:
            if _sha256_of(candidate) == vocab.sha256:
                return folder
            log.warning("ignoring %s: its sha256 is not the one tiktoken expects", candidate)
        except OSError as exc:
            log.warning("cannot read %s: %s", candidate, exc)
    raise TokenizerUnavailable(
        f"No local copy of the {encoding_name} vocabulary (searched: "
        + ", ".join(str(d) for d in searched)
        + "). "
        + _FIX_HINT.format(encoding=encoding_name, file=vocab.cache_file, sha=vocab.sha256),
        {"tokenizer": encoding_name, "searched": [str(d) for d in searched]},
    )
