"""tokend.cli's table of commands loaded by name when run (RUN_WITH_ARGS): mypy and
import-linter do not see those imports, so each entry is checked here: its module imports, it
names a function of (args, stdout), and the parser knows its command."""

from __future__ import annotations

import inspect
from importlib import import_module

from tokend import cli


def test_every_command_loaded_by_name_is_a_function_of_args_and_stdout() -> None:
    for command, (module, function) in cli.RUN_WITH_ARGS.items():
        run = getattr(import_module(f"tokend.commands.{module}"), function)
        assert callable(run), command
        assert len(inspect.signature(run).parameters) == 2, (command, module, function)


def test_every_command_loaded_by_name_is_one_the_parser_knows() -> None:
    parser = cli._parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    assert choices is not None
    assert set(cli.RUN_WITH_ARGS) <= set(choices)
