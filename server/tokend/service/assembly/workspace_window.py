"""What the workspace adds to context/assemble when the client leaves it out.

Only for a session whose workspace the daemon has open (a client named it, or a workspace,
files or repo-map request did): memory files then the session's read-only files fill an empty
`readOnlyFiles`, its chat files an empty `chatFiles`, and its repo map a missing `repoMap`
once the index is built and, for a map that reads them, what its files say counted (until then
a warning says the map was left out).
"""

from __future__ import annotations

from dataclasses import replace

from tokend.core.session.data import SessionData
from tokend.service.assembly.assemble_input import AssembleInput
from tokend.service.repomap.session_map import reads_words, session_map
from tokend.service.workspace.registry import Workspaces
from tokend.service.workspace.session_files import gather


def with_workspace(
    workspaces: Workspaces | None, data: SessionData, inp: AssembleInput
) -> tuple[AssembleInput, tuple[str, ...]]:
    uri = data.info.workspace_uri
    if not uri or workspaces is None:
        return inp, ()
    index = workspaces.get(uri)
    if index is None:
        return inp, ()
    gathered = gather(workspaces, data)
    warnings = list(gathered.memory.warnings)
    if not inp.read_only_files:
        inp = replace(inp, read_only_files=gathered.read_only_texts())
    if not inp.chat_files:
        inp = replace(inp, chat_files=gathered.chat_texts())
    if inp.repo_map is None:
        if index.tags.failed is not None:
            warnings.append(
                f"repo map left out: indexing the workspace failed ({index.tags.failed})"
            )
        elif not index.tags.ready.is_set():
            warnings.append("repo map left out: the workspace is still being indexed")
        elif not index.tags.words_ready.is_set() and reads_words(index, data, None):
            warnings.append("repo map left out: what the workspace's files say is being counted")
        else:
            found = session_map(workspaces, data)
            if found.text:
                inp = replace(inp, repo_map=found.text)
    return inp, tuple(warnings)
