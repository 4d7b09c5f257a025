"""The workspace: a file index per folder kept fresh by a watcher, unsaved buffers, the files
and memory a session sends, and the repo map. `registry.workspaces_of(service)` is the entry."""
