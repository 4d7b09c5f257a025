"""The artifact trail of a conversation, extracted mechanically from its tool calls.

Every file read, created, edited or deleted and every command run with its exit status, as
the tool calls and their results say, never as a model remembers them (summaries written by
models forget which files were touched). Also the exact error strings the tools returned and
the agent's last plan (a todo list). Tool vocabularies known: Claude Code (Read, Write, Edit,
MultiEdit, NotebookEdit, Bash, TodoWrite), OpenCode (read, write, edit, bash, todowrite),
Codex (shell, apply_patch, update_plan), Anthropic's text editor tool
(str_replace_based_edit_tool) and common names (read_file, write_file, delete_file, ...).
"""

from __future__ import annotations

import re
import shlex  # shlex.join only: its split is quadratic in a word's length
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.shell_words import split_words
from tokend.core.types import Message, ToolCallPart, ToolResultPart

MAX_ERROR_CHARS = 300  # an error line longer than this is cut (the start is kept)
MAX_ERRORS_PER_RESULT = 4

_READ_TOOLS = frozenset({"read", "read_file", "readfile", "view", "view_file", "cat", "open_file"})
_WRITE_TOOLS = frozenset({"write", "write_file", "writefile", "create_file", "createfile"})
_EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "notebookedit", "edit_file", "editfile", "replace", "str_replace"}
)
_DELETE_TOOLS = frozenset({"delete", "delete_file", "deletefile", "remove_file", "rm"})
_SHELL_TOOLS = frozenset({"bash", "shell", "run_command", "exec", "terminal", "local_shell"})
_EDITOR_TOOLS = frozenset({"str_replace_based_edit_tool", "str_replace_editor"})
_PATCH_TOOLS = frozenset({"apply_patch", "patch"})
_TODO_TOOLS = frozenset({"todowrite", "todo_write", "update_plan"})
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "target_file", "file", "filename")

_EXIT_CODE = re.compile(r"\bexit(?:ed with)?[ _]?(?:code|status)[:= ]*(-?\d+)", re.IGNORECASE)
_ERRORISH = re.compile(
    r"(error|errors|exception)\b"  # also RuntimeError, KeyError, ...
    r"|\b(fatal|traceback|failed|failures?|panic|denied|cannot|could not|no such file|"
    r"not found|undefined|invalid)\b",
    re.IGNORECASE,
)
_STRONG_ERROR = re.compile(
    r"^(error(\[\w+\])?:|fatal:|panic:|traceback \(most recent call last\)|\*\* \(\w+)"
    r"|^\w*(error|exception):",
    re.IGNORECASE,
)
_REJECTED = "The user doesn't want to proceed with this tool use"


@dataclass(frozen=True, slots=True)
class FileTouch:
    """What happened to one file: its operations in order, each once, with a count."""

    path: str
    ops: tuple[tuple[str, int], ...]  # (operation, times): read, created, edited, deleted, ...


@dataclass(frozen=True, slots=True)
class CommandRun:
    command: str
    status: str  # "exit 0", "exit 2", "error", "rejected by the user", "no result"


@dataclass(frozen=True, slots=True)
class Artifacts:
    files: tuple[FileTouch, ...] = ()  # in order of first touch
    commands: tuple[CommandRun, ...] = ()  # in order run
    errors: tuple[str, ...] = ()  # exact error strings, oldest first, each once
    todos: tuple[tuple[str, str], ...] = ()  # the last plan: (status, text)


def extract_artifacts(messages: Sequence[Message]) -> Artifacts:
    """The artifact trail of `messages` (oldest first)."""
    results: dict[str, ToolResultPart] = {}
    for message in messages:
        for stored in message.parts:
            if isinstance(stored.part, ToolResultPart):
                results[stored.part.call_id] = stored.part
    files: dict[str, dict[str, int]] = {}
    commands: list[CommandRun] = []
    errors: dict[str, None] = {}
    todos: tuple[tuple[str, str], ...] = ()
    for message in messages:
        for stored in message.parts:
            part = stored.part
            if isinstance(part, ToolResultPart):
                for line in error_strings(part):
                    errors.setdefault(line)
                continue
            if not isinstance(part, ToolCallPart):
                continue
            result = results.get(part.call_id)
            for path, op in file_operations(part, result):
                ops = files.setdefault(path, {})
                ops[op] = ops.get(op, 0) + 1
            command = shell_command(part)
            if command is not None:
                commands.append(CommandRun(command, command_status(result)))
            plan = todo_list(part)
            if plan is not None:
                todos = plan
    return Artifacts(
        files=tuple(FileTouch(p, tuple(ops.items())) for p, ops in files.items()),
        commands=tuple(commands),
        errors=tuple(errors),
        todos=todos,
    )


def _tool(name: str) -> str:
    return name.rsplit("__", 1)[-1].lower()  # MCP tools: "mcp__server__read_file"


def _path_of(value: Mapping[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        path = value.get(key)
        if isinstance(path, str) and path.strip():
            return path.strip()
    return None


def file_operations(call: ToolCallPart, result: ToolResultPart | None) -> list[tuple[str, str]]:
    """(path, operation) pairs a tool call performed; a failed one says so ("edit failed")."""
    name, value = _tool(call.name), call.input
    failed = result is not None and result.is_error
    if name in _PATCH_TOOLS:
        text = value.get("input") or value.get("patch") if isinstance(value, dict) else value
        return _patch_operations(text if isinstance(text, str) else "", failed)
    if name in _SHELL_TOOLS:
        command = shell_command(call)
        return [] if command is None else _shell_file_operations(command, failed)
    if not isinstance(value, dict):
        return []
    path = _path_of(value)
    if path is None:
        return []
    if name in _EDITOR_TOOLS:
        sub = str(value.get("command", ""))
        op = {"view": "read", "create": "created"}.get(sub, "edited")
    elif name in _READ_TOOLS:
        op = "read"
    elif name in _WRITE_TOOLS:
        said = result.output[:200].lower() if result is not None else ""
        op = "edited" if ("updated" in said or "overwr" in said) else "created"
    elif name in _EDIT_TOOLS:
        op = "edited"
    elif name in _DELETE_TOOLS:
        op = "deleted"
    else:
        return []
    if failed:
        op = {"read": "read failed", "created": "create failed", "deleted": "delete failed"}.get(
            op, "edit failed"
        )
    return [(path, op)]


def _patch_operations(patch: str, failed: bool) -> list[tuple[str, str]]:
    ops = []
    for line in patch.splitlines():
        for marker, op in (
            ("*** Add File: ", "created"),
            ("*** Update File: ", "edited"),
            ("*** Delete File: ", "deleted"),
            ("*** Move to: ", "created"),
        ):
            if line.startswith(marker):
                ops.append((line[len(marker) :].strip(), op + " failed" if failed else op))
    return ops


def _shell_file_operations(command: str, failed: bool) -> list[tuple[str, str]]:
    """Files a shell command removes or moves (rm, git rm, mv); other commands are listed as
    commands only."""
    ops: list[tuple[str, str]] = []
    for segment in re.split(r"&&|\|\||;|\|", command):
        try:
            argv = split_words(segment)
        except ValueError:
            continue
        if argv[:2] == ["git", "rm"] or argv[:2] == ["git", "mv"]:
            argv = argv[1:]
        if not argv:
            continue
        args = [a for a in argv[1:] if not a.startswith("-")]
        suffix = " failed" if failed else ""
        if argv[0] == "rm":
            ops.extend((a, "deleted" + suffix) for a in args)
        elif argv[0] == "mv" and len(args) == 2:
            ops.extend([(args[0], "moved away" + suffix), (args[1], "created" + suffix)])
    return ops


def shell_command(call: ToolCallPart) -> str | None:
    """The command line of a shell tool call (None: not a shell call)."""
    if _tool(call.name) not in _SHELL_TOOLS:
        return None
    value = call.input
    command = value.get("command", value.get("cmd")) if isinstance(value, dict) else value
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        argv = [str(a) for a in command]
        if argv[:2] in (["bash", "-lc"], ["bash", "-c"], ["sh", "-c"]) and len(argv) == 3:
            return argv[2]
        return shlex.join(argv)
    if isinstance(command, str) and command.strip():
        return command.strip()
    return None


def command_status(result: ToolResultPart | None) -> str:
    """A command's outcome as its result tells it: "exit N" when the output states the code,
    else "exit 0" for a success and "error" for a failure."""
    if result is None:
        return "no result"
    if result.output.startswith(_REJECTED):
        return "rejected by the user"
    match = _EXIT_CODE.search(result.output[:300]) or _EXIT_CODE.search(result.output[-300:])
    if match:
        return f"exit {int(match.group(1))}"
    return "error" if result.is_error else "exit 0"


def error_strings(result: ToolResultPart) -> list[str]:
    """The exact error lines of a tool result (at most MAX_ERRORS_PER_RESULT: the first ones
    and the last): for a failed call, the lines that read as errors (else its first line);
    for a successful one, only lines that start as errors do
    ("error: ...", "Traceback ...", "** (CompileError) ...")."""
    if result.output.startswith(_REJECTED):
        return []
    lines = [line.strip() for line in result.output.splitlines()]
    lines = [line for line in lines if line and not _EXIT_CODE.fullmatch(line)]
    if result.is_error:
        found = [line for line in lines if _ERRORISH.search(line)]
        if not found and lines:
            found = lines[:1]
    else:
        found = [line for line in lines if _STRONG_ERROR.match(line)]
    unique = [_cut(line) for line in _unique(found)]
    if len(unique) <= MAX_ERRORS_PER_RESULT:
        return unique
    # The first lines say what failed; the last one is where test runners put their totals.
    return [*unique[: MAX_ERRORS_PER_RESULT - 1], unique[-1]]


def todo_list(call: ToolCallPart) -> tuple[tuple[str, str], ...] | None:
    """The plan a todo tool call set: ((status, text), ...)."""
    if _tool(call.name) not in _TODO_TOOLS or not isinstance(call.input, dict):
        return None
    items = call.input.get("todos", call.input.get("plan"))
    if not isinstance(items, list):
        return None
    plan = []
    for item in items:
        if isinstance(item, dict):
            text = item.get("content", item.get("step", item.get("text")))
            if isinstance(text, str):
                plan.append((str(item.get("status", "pending")), text))
    return tuple(plan)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_ERROR_CHARS else line[:MAX_ERROR_CHARS] + "…"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
