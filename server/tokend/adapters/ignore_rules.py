"""Which workspace paths git (and ripgrep) would leave out, with pathspec's gitignore matcher.

Sources, lowest precedence first, as git and ripgrep apply them:
  1. the global excludes file: git's `core.excludesFile` from the user's ~/.gitconfig or
     $XDG_CONFIG_HOME/git/config, else $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore);
  2. .git/info/exclude of the workspace root;
  3. .gitignore in every folder (its patterns relative to that folder);
  4. .ignore in every folder (ripgrep's; it wins over .gitignore of the same folder).
A deeper folder's files win over a shallower one's; within the files that match, the last
matching pattern decides (a `!negation` re-includes). The .git folder itself is always out.

Each layer also keeps a screen: one regular expression, the alternation of its patterns'
own expressions, that matches a path exactly when at least one pattern does. A path no
pattern matches (nearly every path of a large tree) is settled by that one C-level match
instead of pathspec trying each pattern in turn; a path some pattern matches goes to
pathspec, which decides as before.

tokend's own folders (adapters.own_folders) are out before any of these rules is asked.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from tokend.core.workspace.own_paths import OwnPaths

IGNORE_FILES = (".gitignore", ".ignore")  # per folder, in increasing precedence
ALWAYS_IGNORED = frozenset({".git"})


_NAMED_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


def screen_of(spec: pathspec.GitIgnoreSpec) -> re.Pattern[str] | None:
    """One expression matching a path exactly when some pattern of `spec` matches it (None:
    the patterns cannot be joined, so every path goes to pathspec). The patterns' named groups
    become plain groups so they may repeat; each alternative is otherwise the pattern's own
    expression, searched as pathspec searches it."""
    sources = []
    flags = set()
    for pattern in spec.patterns:
        regex = getattr(pattern, "regex", None)
        if pattern.include is None or regex is None:
            continue
        if not isinstance(regex.pattern, str):
            return None
        sources.append(_NAMED_GROUP.sub("(?:", regex.pattern))
        flags.add(regex.flags)
    if not sources:
        return re.compile(r"(?!)")  # no pattern: nothing matches
    if len(flags) != 1:
        return None
    try:
        if all(source.startswith("^") for source in sources):  # anchored: match at 0 only
            return re.compile("^(?:" + _shared_prefix_once([s[1:] for s in sources]) + ")",
                              flags.pop())  # fmt: skip
        return re.compile("|".join(f"(?:{s})" for s in sources), flags.pop())
    except re.error:
        return None


ANY_FOLDERS = "(?:.+/)?"  # how pathspec starts a pattern that matches in any folder (`*.o`)


def _shared_prefix_once(alternatives: list[str]) -> str:
    """The alternation of `alternatives`, those that start with ANY_FOLDERS joined behind it
    once (the same paths match: P·A | P·B is P·(A | B)). Each alternative tried its own `.+/`
    over the whole path before its own text: the kernel's root .gitignore (63 such of 92) took
    0.82 CPU s of the walk's 2.7, 0.35 with the prefix once (issue 22)."""
    shared = [a[len(ANY_FOLDERS) :] for a in alternatives if a.startswith(ANY_FOLDERS)]
    rest = [a for a in alternatives if not a.startswith(ANY_FOLDERS)]
    if len(shared) < 2:
        return "|".join(alternatives)
    return "|".join([f"{ANY_FOLDERS}(?:{'|'.join(shared)})", *rest])


@dataclass(frozen=True, slots=True)
class Layer:
    """The rules of one folder (`base` relative to the root, "" for the root). `folders`: the
    same patterns judging a folder by the last that matches it, as git does (pathspec's
    GitIgnoreSpec ranks a pattern that matched through a folder's slash, `!*/`, below one that
    did not, `*`, even for that folder itself: a tree that ignores everything and re-includes
    its folders and files with a dot, go-zero's root .gitignore, walked as empty)."""

    base: str
    spec: pathspec.GitIgnoreSpec
    screen: re.Pattern[str] | None = None
    folders: pathspec.PathSpec[pathspec.Pattern] | None = None  # (None: made from `spec`)

    def __post_init__(self) -> None:
        if self.folders is None:
            object.__setattr__(self, "folders", pathspec.PathSpec(self.spec.patterns))

    @classmethod
    def of(cls, base: str, lines: list[str]) -> Layer:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        return cls(base, spec, screen_of(spec))


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None


def global_excludes_file() -> Path | None:
    """git's global excludes file: core.excludesFile, else the XDG default."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    for config in (Path.home() / ".gitconfig", xdg / "git" / "config"):
        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read(config, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in parser.sections():
            if section.strip().lower() == "core" and parser.has_option(section, "excludesfile"):
                value = parser.get(section, "excludesfile").strip().strip('"')
                return Path(os.path.expanduser(value))
    return xdg / "git" / "ignore"


def root_layers(root: Path) -> list[Layer]:
    """The layers that apply to the whole tree before any folder's own files."""
    layers = []
    for source in (global_excludes_file(), root / ".git" / "info" / "exclude"):
        lines = _read_lines(source) if source is not None else None
        if lines:
            layers.append(Layer.of("", lines))
    return layers


def folder_layers(folder: Path, base: str) -> list[Layer]:
    """The .gitignore and .ignore layers of one folder (none when it has neither)."""
    layers = []
    for name in IGNORE_FILES:
        lines = _read_lines(folder / name)
        if lines:
            layers.append(Layer.of(base, lines))
    return layers


def is_ignored(layers: Sequence[Layer], rel_path: str, is_dir: bool) -> bool:
    """Whether `rel_path` (posix, relative to the root) is left out by `layers`, which run
    from the lowest precedence to the highest. A folder is matched with a trailing slash."""
    if rel_path.split("/", 1)[0] in ALWAYS_IGNORED:
        return True
    decided: bool | None = None
    for layer in layers:
        if layer.base:
            if not rel_path.startswith(layer.base + "/"):
                continue
            local = rel_path[len(layer.base) + 1 :]
        else:
            local = rel_path
        local = local + "/" if is_dir else local
        if layer.screen is not None and layer.screen.search(local) is None:
            continue  # no pattern of this layer matches
        spec = layer.folders if is_dir and layer.folders is not None else layer.spec
        result = spec.check_file(local)
        if result.include is not None:
            decided = result.include
    return bool(decided)


class IgnoreRules:
    """Every layer of a tree, by folder, for judging paths one at a time (the watcher's
    events). Folders' layers are read on first use and dropped when an ignore file changes.
    tokend's own folders inside the tree (`own`) are always out, whatever the files say."""

    def __init__(self, root: Path, own: OwnPaths | None = None) -> None:
        self.root = root
        self.own = own if own is not None else OwnPaths(root, ())
        self._root_layers = root_layers(root)
        self._folders: dict[str, list[Layer]] = {}

    def forget(self, folder_rel: str | None = None) -> None:
        """Re-read ignore files (all of them, or one folder's) on next use."""
        if folder_rel is None:
            self._folders.clear()
            self._root_layers = root_layers(self.root)
        else:
            self._folders.pop(folder_rel, None)

    def holds_rules(self, rel: str) -> bool:
        """Whether `rel` is a file the rules are read from (an ignore file, .git/info/exclude):
        once it changed, `forget` them."""
        return rel.split("/")[-1] in IGNORE_FILES or rel == ".git/info/exclude"

    def layers_for(self, folder_rel: str) -> list[Layer]:
        """The layers that judge the entries of `folder_rel` ("" for the root)."""
        layers = list(self._root_layers)
        parts = folder_rel.split("/") if folder_rel else []
        for depth in range(len(parts) + 1):
            base = "/".join(parts[:depth])
            if base not in self._folders:
                self._folders[base] = folder_layers(self.root / base if base else self.root, base)
            layers.extend(self._folders[base])
        return layers

    def ignored(self, rel_path: str, is_dir: bool = False) -> bool:
        """Whether `rel_path` or any folder above it is left out."""
        if self.own.owns(rel_path):
            return True
        parts = rel_path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            parent = "/".join(parts[: depth - 1])
            if is_ignored(self.layers_for(parent), folder, True):
                return True
        return is_ignored(self.layers_for("/".join(parts[:-1])), rel_path, is_dir)
