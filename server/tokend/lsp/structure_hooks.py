"""The converters' structure hooks: values of the wrong JSON type refused in one step.

- `strict_sequences(converter)`: where an array is due (`list[X]`, `Sequence[X]`), cattrs takes
  any iterable: a 100,000-character string was structured one character at a time, each a
  failed item with its own error (16-42 s, a 16.5 MB reply), and an object's keys were taken
  as items. Registered on both converters (tokend's wire types and lsprotocol's), the hook
  refuses anything but a JSON array in one step, and stops at an array's first bad item.
- `strict_lsp_values(converter)`: lsprotocol's types take values as sent, and objects only
  where objects are due, as tokend's own wire types do (lsp/wire/).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
import cattrs
from cattrs.cols import is_sequence
from cattrs.errors import IterableValidationError, IterableValidationNote

from tokend.core.excerpt import excerpt
from tokend.lsp.strict import WireValueError, json_type


def strict_sequences(converter: cattrs.Converter) -> None:
    """Make `converter` refuse anything but a JSON array where a sequence is due, in one step."""

    def is_list_like(type_: Any) -> bool:
        return is_sequence(type_) and getattr(type_, "__origin__", None) is not tuple

    converter.register_structure_hook_factory(is_list_like, lambda t: _array_hook(t, converter))


def strict_lsp_values(converter: cattrs.Converter) -> None:
    """lsprotocol's converter as strict as tokend's wire types: an object where an object is
    due (its generated code reads optional fields with `"name" in value`, so a string passed as
    an object with every field left out), and strings, integers and booleans taken as sent
    (cattrs would turn 5 into "5", "5" and true into 5). LSP's integers are 32-bit signed."""
    pairs = converter._structure_func._function_dispatch._handler_pairs  # pinned cattrs 26
    attrs_factory: tuple[Any, bool] = next(
        (handler, takes_converter)
        for predicate, handler, is_generator, takes_converter in pairs
        if predicate is attrs.has and is_generator
    )

    def object_factory(cls: type) -> Any:
        handler, takes_converter = attrs_factory
        fields = handler(cls, converter) if takes_converter else handler(cls)

        def structure_object(value: Any, type_: Any) -> Any:
            if not isinstance(value, dict):
                raise WireValueError(f"must be an object, not {json_type(value)}")
            return fields(value, type_)

        return structure_object

    converter.register_structure_hook_factory(attrs.has, object_factory)
    converter.register_structure_hook(str, _lsp_str)
    converter.register_structure_hook(int, _lsp_int)
    converter.register_structure_hook(bool, _lsp_bool)


def _lsp_str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise WireValueError(f"must be a string, not {json_type(value)}")
    return value


def _lsp_int(value: Any, _type: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireValueError(f"must be an integer, not {json_type(value)}")
    if not -(2**31) <= value < 2**31:
        raise WireValueError(f"must be a 32-bit integer, not {excerpt(value)}")
    return value


def _lsp_bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise WireValueError(f"must be true or false, not {json_type(value)}")
    return value


def _array_hook(type_: Any, converter: cattrs.Converter) -> Any:
    args = getattr(type_, "__args__", None)
    elem_type = args[0] if args else Any
    handler = None if elem_type is Any else converter.get_structure_hook(elem_type)

    def structure_array(value: Any, _type: Any) -> list[Any]:
        if not isinstance(value, list):
            raise WireValueError(f"must be an array, not {json_type(value)}")
        if handler is None:
            return list(value)
        return _items(value, handler, elem_type, type_)

    return structure_array


def _items(value: Iterable[Any], handler: Any, elem_type: Any, type_: Any) -> list[Any]:
    """Each item structured; the first bad one is the error (an array of 100,000 bad items
    costs one exception, not 100,000)."""
    items = []
    for index, item in enumerate(value):
        try:
            items.append(handler(item, elem_type))
        except Exception as exc:
            note = IterableValidationNote(f"Structuring @ index {index}", index, elem_type)
            exc.__notes__ = [*getattr(exc, "__notes__", []), note]
            raise IterableValidationError("an array item does not fit", [exc], type_) from None
    return items
