"""`tokend models show NAME [--json]`."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from tokend.adapters.catalog_source import load_catalog
from tokend.adapters.config_files import read_user_config, read_workspace_config
from tokend.core.budget import autocompact_threshold
from tokend.core.config import TokendConfig


def model_figures(name: str, workspace: Path | None = None) -> dict[str, object]:
    catalog = load_catalog(read_user_config(), read_workspace_config(workspace))
    info = catalog.get(name)
    figures = {_camel(k): v for k, v in asdict(info).items()}
    figures["autocompactThreshold"] = autocompact_threshold(info, TokendConfig().compaction)
    return figures


def show_model(name: str, as_json: bool, out: TextIO) -> int:
    figures = model_figures(name, Path.cwd())
    if as_json:
        out.write(json.dumps(figures, indent=2, default=str) + "\n")
        return 0
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        out.write(f"{key:<{width}}  {shown}\n")
    return 0


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)
