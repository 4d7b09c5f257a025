"""The workspace: file index, session files and memory, the repo map.

Importing any module of this package runs this first, so every Workspaces made by
`registry.workspaces_of` re-measures the sessions whose files change (session_files), without
registry importing session_files (which imports registry).
"""

from tokend.service.workspace import registry, session_files


def _install_session_refresh(workspaces: registry.Workspaces) -> None:
    workspaces.session_hooks.append(
        lambda index, paths: session_files.refresh_sessions(workspaces, index, paths)
    )


registry.INSTALLERS.append(_install_session_refresh)
