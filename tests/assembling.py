"""context/assemble as production runs it (service.assembly.assemble.assemble_context_async: built in the
service's worker threads, the measured figures applied by the session's owner), for a
synchronous test or script."""

from __future__ import annotations

from typing import Any

from tests.appending import run_on_own_loop
from tokend.core.assembly.assemble import Assembly
from tokend.service.assembly.assemble import AssembleInput, assemble_context_async
from tokend.service.service import TokendService

__all__ = ["AssembleInput", "assemble_context"]


def assemble_context(
    service: TokendService, session_id: str, inp: AssembleInput, **options: Any
) -> Assembly:
    """The assembly `context/assemble` answers, run on an event loop of its own (from a
    coroutine, on a loop in another thread while this one waits)."""

    async def assembled() -> Assembly:
        return await assemble_context_async(service, session_id, inp, **options)

    return run_on_own_loop(assembled())
