"""`tokend models show NAME [--json]` and `tokend models list [PATTERN] [--json]`."""

from __future__ import annotations

import fnmatch
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from tokend.adapters.catalog_source import load_catalog
from tokend.adapters.config_files import read_user_config, read_workspace_config
from tokend.commands.output import Column, say, write_json, write_table
from tokend.core.budget.limits import autocompact_threshold
from tokend.core.models.catalog import Catalog, ModelInfo, PriceTier, TokenPrices
from tokend.core.settings.tables import TokendConfig

PER_MTOK = 1_000_000  # prices are dollars per token; tables show dollars per million tokens
_GLOB_CHARS = frozenset("*?[")


def _catalog(workspace: Path | None) -> Catalog:
    return load_catalog(read_user_config(), read_workspace_config(workspace))


def _figures(info: ModelInfo) -> dict[str, object]:
    figures: dict[str, object] = _camel_keys(asdict(info))
    figures["autocompactThreshold"] = autocompact_threshold(info, TokendConfig().compaction)
    return figures


def show_model(name: str, as_json: bool, out: TextIO) -> int:
    info = _catalog(Path.cwd()).get(name)
    figures = _figures(info)
    if as_json:
        write_json(out, figures)
        return 0
    figures["prices"] = _prices_text(info.prices)
    figures["priceTiers"] = _tiers_text(info.price_tiers)
    figures["tokenizer"] = info.tokenizer or "estimate"  # as `models list` says it
    if info.input_limit is None:
        figures["inputLimit"] = "none (the context window applies)"
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        out.write(f"{key:<{width}}  {shown}\n")
    return 0


def list_models(pattern: str | None, as_json: bool, out: TextIO) -> int:
    """The catalog's models whose name matches `pattern` (a glob when it has * ? or [, else a
    substring; any case), sorted by name: a table, or with `as_json` a JSON list. 1 when none."""
    catalog = _catalog(Path.cwd())
    names = sorted(catalog.names(), key=str.lower)
    if not names:
        say(
            out,
            "The model catalog is empty: its data file was not found. Reinstall tokend with pip "
            "or pipx (its wheel ships the catalog), or in a source checkout run scripts/bootstrap.",
        )
        return 1
    models = [catalog.get(name) for name in names if pattern is None or _matches(pattern, name)]
    if as_json:
        write_json(out, [_listed(info) for info in models])
    elif models:
        columns = [
            Column("name"),
            Column("window", "right"),
            Column("max output", "right"),
            Column("input $/Mtok", "right"),
            Column("output $/Mtok", "right"),
            Column("tokenizer"),
        ]
        write_table(out, columns, [_row(info) for info in models])
    else:
        say(out, f"No model in the catalog matches {pattern!r}.")
    return 0 if models else 1


def _matches(pattern: str, name: str) -> bool:
    wanted, lower = pattern.lower(), name.lower()
    if _GLOB_CHARS & set(wanted):
        return fnmatch.fnmatchcase(lower, wanted)
    return wanted in lower


def _listed(info: ModelInfo) -> dict[str, object]:
    return {
        "name": info.name,
        "provider": info.provider,
        "contextWindow": info.context_window,
        "maxOutputTokens": info.max_output_tokens,
        "inputUsdPerMtok": _per_mtok(info.prices.input),
        "outputUsdPerMtok": _per_mtok(info.prices.output),
        "tokenizer": info.tokenizer,
    }


def _row(info: ModelInfo) -> list[str]:
    return [
        info.name,
        f"{info.context_window:,}",
        f"{info.max_output_tokens:,}" if info.max_output_tokens else "-",
        _money(_per_mtok(info.prices.input)),
        _money(_per_mtok(info.prices.output)),
        info.tokenizer or "estimate",
    ]


def _per_mtok(rate: float | None) -> float | None:
    return None if rate is None else round(rate * PER_MTOK, 6)


def _money(value: float | None) -> str:
    """2.5 -> "2.50", 0.0435 -> "0.0435", None -> "-"."""
    if value is None:
        return "-"
    if abs(value * 100 - round(value * 100)) < 1e-9:
        return f"{value:,.2f}"
    return f"{value:,.6f}".rstrip("0")


def _prices_text(prices: TokenPrices) -> str:
    """E.g. "input $2.50, output $10.00, cacheRead $1.25 per Mtok"."""
    rates = _camel_keys(asdict(prices)).items()
    shown = [f"{k} ${_money(_per_mtok(v))}" for k, v in rates if v is not None]
    return (", ".join(shown) + " per Mtok") if shown else "unknown"


def _tiers_text(tiers: tuple[PriceTier, ...]) -> str:
    """E.g. "above 272,000: input $5.00 per Mtok", or "none"."""
    shown = [f"above {t.above_tokens:,}: {_prices_text(t.prices)}" for t in tiers]
    return "; ".join(shown) or "none"


def _camel_keys(value: Any) -> Any:
    """Dicts (nested, in lists too) with snake_case keys -> camelCase keys."""
    if isinstance(value, dict):
        return {_camel(k): _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_camel_keys(v) for v in value]
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)
