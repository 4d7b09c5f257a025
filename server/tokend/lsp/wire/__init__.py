"""Wire types, one module per feature (protocol.md's sections): lsp/wire/<feature>.py holds the
params and results of that feature's methods; `common` the converter and what every feature
shares. This package's own names are the converter's (`from_wire`, `to_wire`, `JsonText`, ...)."""

from tokend.lsp.wire.common import (
    MAX_WIRE_INT,
    JsonBytes,
    JsonText,
    NoParams,
    ProgressToken,
    SessionIdParams,
    camel,
    converter,
    flattened,
    from_wire,
    json_array,
    omitted,
    to_wire,
)

__all__ = [
    "MAX_WIRE_INT",
    "JsonBytes",
    "JsonText",
    "NoParams",
    "ProgressToken",
    "SessionIdParams",
    "camel",
    "converter",
    "flattened",
    "from_wire",
    "json_array",
    "omitted",
    "to_wire",
]
