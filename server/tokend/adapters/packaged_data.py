"""The data a built tokend wheel carries: litellm's model catalog and tiktoken's vocabularies.

The wheel build (hatch_build.py, at the repository root) takes these files out of one pinned litellm
wheel and writes them under tokend/data/, laid out as below; a source checkout gets the same folder,
server/tokend/data/ (ignored by git), from scripts/bootstrap (hatch_build.py --checkout-data), so an
editable install finds them exactly where a wheel does. Standard library
only: the build loads this module by path, before tokend is installed, for the layout and hashes.

    tokend/data/model_prices_and_context_window_backup.json   litellm's model catalog
    tokend/data/tiktoken/<sha1 of the download URL>          a tiktoken cache folder
    tokend/data/SOURCE.txt, tokend/data/LICENSE.litellm       where they came from, litellm's licence
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Where tiktoken keeps one encoding's vocabulary: cache file name and expected sha256."""

    cache_file: str  # sha1 of the URL tiktoken downloads it from (tiktoken/load.py)
    sha256: str  # what tiktoken_ext/openai_public.py expects


VOCABULARIES: dict[str, Vocabulary] = {
    "o200k_base": Vocabulary(
        "fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": Vocabulary(
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
"""The encodings tokend counts exactly; the wheel ships each one."""

DATA_DIR = "data"
CATALOG_FILE = "model_prices_and_context_window_backup.json"
VOCABULARY_DIR = "tiktoken"

LITELLM_CATALOG = f"litellm/{CATALOG_FILE}"
LITELLM_VOCABULARY_DIR = "litellm/litellm_core_utils/tokenizers"
"""Where the same files sit inside litellm's wheel."""


def packaged_data_dir() -> Path | None:
    """tokend/data/ of an installed wheel, or a checkout's server/tokend/data/ once bootstrapped;
    None when neither is there."""
    folder = Path(__file__).resolve().parent.parent / DATA_DIR
    return folder if folder.is_dir() else None


def packaged_catalog() -> Path | None:
    """The catalog JSON the wheel ships, or None."""
    folder = packaged_data_dir()
    path = folder / CATALOG_FILE if folder is not None else None
    return path if path is not None and path.is_file() else None


def packaged_vocabulary_dir() -> Path | None:
    """The tiktoken cache folder the wheel ships, or None."""
    folder = packaged_data_dir()
    path = folder / VOCABULARY_DIR if folder is not None else None
    return path if path is not None and path.is_dir() else None
