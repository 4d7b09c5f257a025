"""core.compaction.summary_check: what must survive is looked for verbatim in the summary and the kept tail;
a pruned part's text is not what the model sees. Budgets are counted in words (an oracle that
shares nothing with a tokenizer)."""

from __future__ import annotations

from datetime import UTC, datetime

from tokend.core.artifacts import FileTouch
from tokend.core.compaction.digest import Digest
from tokend.core.compaction.summary_check import check_summary
from tokend.core.types import Message, StoredPart, TextPart, ToolResultPart

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def words(texts):
    return [len(t.split()) for t in texts]


def tail(*parts: StoredPart) -> list[Message]:
    return [Message("m1", "s", "user", tuple(parts), T0)]


DIGEST = Digest(
    user_words=("old words that no longer fit", "the newest words"),
    files=(FileTouch("src/a.py", (("edited", 1),)), FileTouch("src/b.py", (("read", 1),))),
    errors=("error: first", "error: second"),
)


def test_everything_found_in_the_summary_or_the_tail_passes():
    kept = tail(StoredPart("p1", ToolResultPart("c", "Bash", "error: second")))
    check = check_summary(
        DIGEST, "the newest words\nsrc/a.py src/b.py\nerror: first", kept, words, 4
    )
    assert check.passed, check
    assert check.found() == "1/1 user messages, 2/2 files, 2/2 error lines present"


def test_what_is_missing_is_named_and_a_pruned_part_does_not_count():
    pruned = StoredPart("p1", ToolResultPart("c", "Bash", "error: second"), compacted_at=T0)
    check = check_summary(DIGEST, "src/a.py", tail(pruned), words, 100)
    assert not check.passed
    assert check.missing_words == DIGEST.user_words
    assert check.missing_files == ("src/b.py",)
    assert check.missing_errors == ("error: first", "error: second")
    assert check.gaps() == "2 user messages, 1 file, 2 error lines"


def test_the_users_words_are_wanted_only_within_their_budget():
    kept = tail(StoredPart("p1", TextPart("src/a.py src/b.py error: first error: second")))
    check = check_summary(DIGEST, "the newest words", kept, words, 4)
    assert check.passed and check.wanted == (1, 2, 2)
