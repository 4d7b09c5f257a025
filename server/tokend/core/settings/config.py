"""How TOML layers become a settings dataclass, checked against the dataclass's own types. Pure.

Layers, later wins: the defaults < the user's config.toml < the workspace's .tokend.toml. Each
key of a layer is structured on its own against its field's type (cattrs, with strict hooks:
`5` is not a string, `true` is not an integer, a string is not a list) and then against the
rules its type carries (`Annotated[int, at_least(1)]`, see tokend.core.config_rules). A key
that fails is reported as a warning naming the file, the key, the value and what was expected,
and the value of the layers below it is kept; the other keys of the table still apply, so a
typo never stops the daemon (jedi-language-server's habit). Which layer set each value is kept
too (`MergedConfig.origins`), for `tokend config`.

The settings themselves (`TokendConfig`, one field per table) are in tokend.core.settings.tables; each
table's dataclass and its rules live with its feature. This module knows none of them: a field
whose type is a dataclass is a `[table]`, `UserOnly` marks what a workspace may not set,
`NamedTables` a table of `[NAME."x"]` tables merged key by key, and a dataclass's `RANGES`
pairs of fields that must not cross.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from tokend.core.config_rules import Invalid, NamedTables, UserOnly, extras, field_types, structure

C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class ConfigLayer:
    """One parsed TOML document. `name` is what `MergedConfig.origins` records ("user",
    "workspace"); `source` is how warnings name it (the file's path)."""

    name: str
    source: str
    document: Mapping[str, Any]
    workspace: bool = False  # a workspace layer may not set what is UserOnly


@dataclass(frozen=True, slots=True)
class MergedConfig(Generic[C]):
    """The merged settings, one warning per ignored key or invalid value, and which layer set
    each value: dotted key ("budget.output_reserve_cap", 'models."NAME".context_window') ->
    layer name. A key that is absent kept its default. `rejected`: the keys whose value a layer
    set but that was refused (invalid, or a range crossed), and that layer's name, while no later
    layer set the key (the value below it applies)."""

    config: C
    warnings: tuple[str, ...]
    origins: Mapping[str, str]
    rejected: Mapping[str, str] = dataclasses.field(default_factory=dict)


def model_key(name: str, key: str, table: str = "models") -> str:
    """The dotted name of one key of a `[models."NAME"]` table, as TOML spells it."""
    return f'{table}."{name}".{key}'


class _Merge:
    """One layer applied: the warnings it raised, the dotted keys it set and those it refused."""

    def __init__(self, layer: ConfigLayer) -> None:
        self.layer = layer
        self.warnings: list[str] = []
        self.accepted: list[str] = []
        self.refused: list[str] = []

    def apply(self, current: Any, table: Any, path: str = "") -> Any:
        """`current` (a settings dataclass) with the valid keys of `table` applied; `path` is
        the table's name ("" at the top, "budget" for [budget])."""
        source = self.layer.source
        where = f"{source}: [{path}]" if path else f"{source}:"
        if not isinstance(table, Mapping):
            self.warnings.append(f"{where} must be a table; ignored")
            return current
        types_ = field_types(type(current))
        changes: dict[str, Any] = {}
        for key, value in table.items():
            if key not in types_:
                self.warnings.append(
                    f"{where} {key} is not a known setting{_near(key, types_)}; ignored"
                )
                continue
            base, marks = extras(types_[key])
            dotted = f"{path}.{key}" if path else key
            user_only = next((e for e in marks if isinstance(e, UserOnly)), None)
            if user_only is not None and self.layer.workspace:
                name = (
                    f"{source}: [{dotted}]" if dataclasses.is_dataclass(base) else f"{where} {key}"
                )
                self.warnings.append(
                    f"{name} is read from {user_only.readers} only ({user_only.reason}); ignored"
                )
            elif dataclasses.is_dataclass(base):
                changes[key] = self.apply(getattr(current, key), value, dotted)
            elif any(isinstance(e, NamedTables) for e in marks):
                changes[key] = self._named_tables(getattr(current, key), value, dotted)
            else:
                try:
                    changes[key] = structure(value, types_[key])
                except Invalid as error:
                    kept = getattr(current, key)
                    self.warnings.append(
                        f"{where} {key} = {value!r} is invalid (expected {error}); using {kept!r}"
                    )
                    self.refused.append(dotted)
                    continue
                self.accepted.append(dotted)
        return self._ranges(current, replace(current, **changes), where, path)

    def _ranges(self, before: Any, after: Any, where: str, path: str) -> Any:
        """Each (low, high) pair of `RANGES` that now crosses goes back to its values before."""
        for low, high in getattr(type(after), "RANGES", ()):
            if getattr(after, low) > getattr(after, high):
                kept = {low: getattr(before, low), high: getattr(before, high)}
                self.warnings.append(
                    f"{where} {low} is above {high}; using {kept[low]}..{kept[high]}"
                )
                after = replace(after, **kept)
                gone = {f"{path}.{low}", f"{path}.{high}"}
                self.accepted[:] = [key for key in self.accepted if key not in gone]
                self.refused += sorted(gone)
        return after

    def _named_tables(self, current: Mapping[str, Any], value: Any, name: str) -> Any:
        source = self.layer.source
        if not isinstance(value, Mapping):
            self.warnings.append(
                f'{source}: [{name}] must be a table of [{name}."NAME"] tables; ignored'
            )
            return current
        merged = {table_name: dict(table) for table_name, table in current.items()}
        for table_name, table in value.items():
            if isinstance(table, Mapping):
                merged[table_name] = {**merged.get(table_name, {}), **table}
                self.accepted += [model_key(table_name, key, name) for key in table]
            else:
                self.warnings.append(f'{source}: [{name}."{table_name}"] must be a table; ignored')
        return merged


def _near(key: object, known: Mapping[str, object]) -> str:
    """ " (did you mean NAME?)" for a likely typo of a known key, else ""."""
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def merge_layers(defaults: C, layers: Sequence[ConfigLayer]) -> MergedConfig[C]:
    """`defaults` (a settings dataclass), then each layer in order (a later layer wins)."""
    warnings: list[str] = []
    origins: dict[str, str] = {}
    rejected: dict[str, str] = {}
    config = defaults
    for layer in layers:
        merge = _Merge(layer)
        config = merge.apply(config, layer.document)
        warnings += merge.warnings
        origins.update(dict.fromkeys(merge.accepted, layer.name))
        for key in merge.accepted:
            rejected.pop(key, None)
        rejected.update(dict.fromkeys(merge.refused, layer.name))
    return MergedConfig(config, tuple(warnings), origins, rejected)


def merge_config(
    defaults: C,
    user: Mapping[str, Any],
    workspace: Mapping[str, Any],
    *,
    sources: tuple[str, str] = ("user config", "workspace config"),
) -> tuple[C, list[str]]:
    """`defaults` < `user` < `workspace` (parsed TOML documents). Returns the merged config and
    one warning per ignored key or invalid value; `sources` name the layers in the warnings."""
    merged = merge_layers(
        defaults,
        [
            ConfigLayer("user", sources[0], user),
            ConfigLayer("workspace", sources[1], workspace, workspace=True),
        ],
    )
    return merged.config, list(merged.warnings)
