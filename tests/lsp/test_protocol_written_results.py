"""A result already written as JSON (lsp.wire.JsonBytes, JsonText: `context/assemble`'s reply,
the workspace's file figures) goes through the typed handlers' `to_wire` as it is, found by its
class: cattrs, asked to unstructure a class it has no hook for, first asks whether it is a
typing.Protocol, which checks the class against every Protocol loaded (issue 22: 2.6 ms on the
event loop at a restarted daemon's first `context/assemble` reply).

Counted in a fresh interpreter (the converter's dispatch is cached for the process's life),
with the daemon's modules loaded: the Protocols' members computed (typing._get_protocol_attrs)
while the two classes are unstructured the first time. Main 8148dde: 29 for JsonBytes."""

from __future__ import annotations

from tests.conftest import fresh_interpreter

PROGRAM = """
import json, typing
import tokend.daemon.main, tokend.lsp.server, tokend.service.app
from tokend.lsp.handlers import modules
modules()
from tokend.lsp import wire
counted = []
attrs = typing._get_protocol_attrs
typing._get_protocol_attrs = lambda cls: counted.append(cls) or attrs(cls)
reply = wire.JsonBytes([b'{"messages": ', b'[]', b"}"])
text = wire.JsonText("[1, 2]")
same = wire.to_wire(reply) is reply and wire.to_wire(text) is text
print(json.dumps({"protocols": len(counted), "same": same}))
"""


def test_a_written_result_is_sent_without_asking_what_its_class_is() -> None:
    got = fresh_interpreter(PROGRAM)
    assert got == {"protocols": 0, "same": True}
