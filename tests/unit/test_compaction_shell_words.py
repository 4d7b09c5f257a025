"""The linear shell-word splitter agrees with shlex (the oracle) and stays linear on long words."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.shell_words import split_words

# Characters that steer shell splitting, and a few that do not.
_SHELL_TEXT = st.text(alphabet=" \t\r\n'\"\\ab-é;|&$", max_size=40)


def _shlex_or_error(text: str) -> list[str] | str:
    try:
        return shlex.split(text)
    except ValueError:
        return "error"


def _ours_or_error(text: str) -> list[str] | str:
    try:
        return split_words(text)
    except ValueError:
        return "error"


@settings(max_examples=3000)
@given(_SHELL_TEXT)
def test_the_words_are_shlexs(text: str) -> None:
    assert _ours_or_error(text) == _shlex_or_error(text)


def test_known_lines() -> None:
    for line in [
        "rm -rf build dist",
        'git mv \'old name.txt\' "new \\"name\\".txt"',
        r"echo a\ b 'c\d' \"e\" \\",
        "printf '' \"\" x''y",
        'echo "a\\$b \\\\ \\n"',
    ]:
        assert split_words(line) == shlex.split(line), line
    assert split_words("") == [] and split_words(" \n\t ") == []


# Run in a child process so that a return to quadratic time (more than 20 minutes for 8 MiB)
# fails with a message instead of holding the suite; the measured figure is in the `artifacts`
# bench section, not here.
_INDEX_8_MIB = """
from datetime import UTC, datetime
from tokend.core.artifacts import extract_artifacts, file_operations
from tokend.core.types import Message, StoredPart, ToolCallPart, ToolResultPart

blob = "QUJD" * (2 * 1024 * 1024)  # 8 MiB of base64, one word
command = f"echo {blob} | base64 -d > out.bin && rm -f stale.bin"
call = ToolCallPart("toolu_1", "Bash", {"command": command})
result = ToolResultPart("toolu_1", "Bash", "ok")
message = Message("m1", "s", "assistant", (StoredPart("p1", call), StoredPart("p2", result)),
                  datetime(2026, 1, 1, tzinfo=UTC))
found = extract_artifacts([message])
print([(f.path, f.ops) for f in found.files], [c.status for c in found.commands])
quoted = ToolCallPart("toolu_2", "Bash", {"command": f"mv '{blob}' b && rm \\"{blob}x\\""})
print([(path == blob, path[-1], op) for path, op in file_operations(quoted, None)])
"""


def test_an_8_mib_single_word_command_is_indexed() -> None:
    """A base64 blob as one word (shlex: quadratic, minutes): the files it touches are found."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _INDEX_8_MIB], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("indexing one 8 MiB command took more than 120 s (quadratic splitting?)")
    assert done.returncode == 0, done.stderr[-2000:]
    files, moves = done.stdout.splitlines()
    assert files == "[('stale.bin', (('deleted', 1),))] ['exit 0']"
    assert moves == (
        "[(True, 'D', 'moved away'), (False, 'b', 'created'), (False, 'x', 'deleted')]"
    )
