"""tokend's own paths inside one workspace root, and the one answer to "is this path tokend's
own?" (`OwnPaths.owns`): the walk, the watcher, the checkpointer and the repo map all leave
them out. Which folders are tokend's is read from the machine by adapters.own_folders
(`own_paths_inside`); this is the value it gives, pure string work on paths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class OwnPaths:
    """tokend's own paths inside one workspace root, relative to it (posix). "" stands for
    the whole root (the workspace is itself inside one of tokend's folders)."""

    root: Path
    rels: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.rels)

    def owns(self, rel: str) -> bool:
        """Whether the root-relative posix path `rel` is one of tokend's own or under one."""
        for own in self.rels:
            if not own or rel == own or rel.startswith(own + "/"):
                return True
        return False

    def owns_path(self, path: str | bytes | os.PathLike[str]) -> bool:
        """`owns` for an absolute path under the root, as a watcher names it."""
        if not self.rels:
            return False
        text = os.fsdecode(path)
        root = os.fspath(self.root)
        if text == root:
            return self.owns("")
        if not text.startswith(root.rstrip("/") + "/"):
            return False
        return self.owns(text[len(root.rstrip("/")) + 1 :])

    def folders(self) -> list[Path]:
        """The absolute paths of tokend's own paths in the root."""
        return [self.root / rel if rel else self.root for rel in self.rels]
