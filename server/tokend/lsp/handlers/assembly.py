"""The assembly feature: context/assemble, with compaction.auto as a pre-send check: a session
whose gauge is at or over the autocompact threshold is compacted (off the event loop) before it
is assembled.

That compaction is cancellable as an append's is (a server-made progress token, or
$/cancelRequest of the assemble): cancelled, it writes nothing and the assemble answers as if
it had not run (or ContextOverflow when the context does not fit). The assembly itself is
built in the service's worker threads, so other connections are answered meanwhile."""

from __future__ import annotations

from tokend.lsp.assemble_reply import assemble_text
from tokend.lsp.handler_table import features
from tokend.lsp.handlers.compaction import announce_compaction
from tokend.lsp.progress import auto_progress
from tokend.lsp.server import TokendServer
from tokend.lsp.wire import JsonBytes
from tokend.lsp.wire.assembly import AssembleResult, ContextAssembleParams
from tokend.service.assembly.assemble import assemble_context_async
from tokend.service.assembly.assemble_input import AssembleInput
from tokend.service.compaction.auto_compaction import auto_compact_async


async def assemble(ls: TokendServer, params: ContextAssembleParams) -> JsonBytes | AssembleResult:
    p = params
    ls.watch(p.session_id)
    inp = AssembleInput(
        format=p.format,
        system=p.system,
        tools=p.tools or (),
        examples=p.examples or (),
        read_only_files=[(f.path, f.text) for f in p.read_only_files or ()],
        repo_map=p.repo_map,
        chat_files=[(f.path, f.text) for f in p.chat_files or ()],
        reminder=p.reminder,
        budget_injection=p.budget_injection,
        context_editing=p.context_editing,
    )
    with ls.host.busy():
        compacted = await auto_compact_async(ls.service, p.session_id, progress=auto_progress(ls))
        if compacted is not None:
            announce_compaction(ls, p.session_id, compacted, everyone=True)
        # Off the event loop: file reads, the repo map, counting, the measured figures' write.
        assembly = await assemble_context_async(
            ls.service, p.session_id, inp, usage=ls.app.usage, workspaces=ls.app.workspaces
        )
        # Beside the loop: the reply's text, joined from the messages' cached JSON.
        cache = ls.service.sessions.state(p.session_id).render_cache
        return await ls.service.workers.run(lambda: assemble_text(assembly, cache))


FEATURES = features({"context/assemble": assemble})
