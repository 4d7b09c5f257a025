"""Tier 2 with the real vocabularies: offline resolution, exact counts, the content-hash cache."""

from __future__ import annotations

import base64
import shutil
import sysconfig
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tokend.adapters import packaged_data, tokenizers, vocabularies
from tokend.adapters.tokenizers import (
    VOCABULARIES,
    CachedCounter,
    TiktokenCounter,
    counter_for,
    find_vocabulary,
    load_encoding,
    vocabulary_search_dirs,
)
from tokend.core.counting.estimate import EstimateCounter, estimate_tokens
from tokend.core.counting.framing import tool_schemas_tokens
from tokend.core.errors import TokenizerUnavailable

SERVER = Path(__file__).resolve().parents[2] / "server" / "tokend"
O200K = VOCABULARIES["o200k_base"]


@pytest.fixture
def bundled() -> Path:
    """The copies tokend ships (a checkout's server/tokend/data/tiktoken, from bootstrap)."""
    folder = packaged_data.packaged_vocabulary_dir()
    assert folder is not None and (folder / O200K.cache_file).is_file(), (
        "server/tokend/data/ (the vocabularies a checkout uses) is missing: run scripts/bootstrap"
    )
    return folder


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No env folders, an empty default tiktoken cache, no packaged data (a checkout has none),
    fresh per-process encodings."""
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    empty_tmp = tmp_path / "tmp"
    empty_tmp.mkdir()
    monkeypatch.setattr(vocabularies.tempfile, "gettempdir", lambda: str(empty_tmp))
    monkeypatch.setattr(vocabularies, "packaged_vocabulary_dir", lambda: None)
    monkeypatch.setattr(tokenizers, "_encodings", {})
    return tmp_path


def _copy_vocabularies(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for vocabulary in VOCABULARIES.values():
        shutil.copy(source / vocabulary.cache_file, folder / vocabulary.cache_file)
    return folder


def test_resolves_from_tiktoken_cache_dir(
    nowhere: Path, bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = nowhere / "cache"
    cache.mkdir()
    shutil.copy(bundled / O200K.cache_file, cache / O200K.cache_file)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    assert find_vocabulary("o200k_base") == cache
    assert TiktokenCounter("o200k_base").count("hello world") == 2


def test_resolves_from_the_packaged_copy_and_leaves_the_environment_alone(
    nowhere: Path, bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setattr(vocabularies, "packaged_vocabulary_dir", lambda: bundled)
    assert find_vocabulary("o200k_base") == bundled
    assert find_vocabulary("cl100k_base") == bundled
    assert TiktokenCounter("cl100k_base").count("hello world") == 2
    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_a_corrupt_copy_is_skipped_not_deleted(
    nowhere: Path, bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = nowhere / "cache"
    cache.mkdir()
    (cache / O200K.cache_file).write_bytes(b"truncated download")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setattr(vocabularies, "packaged_vocabulary_dir", lambda: bundled)
    assert find_vocabulary("o200k_base") == bundled
    assert (cache / O200K.cache_file).read_bytes() == b"truncated download"


def test_the_search_order_puts_the_packaged_copy_after_tiktoken_s(
    nowhere: Path, bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packaged = _copy_vocabularies(
        bundled, nowhere / "site-packages" / "tokend" / "data" / "tiktoken"
    )
    monkeypatch.setattr(vocabularies, "packaged_vocabulary_dir", lambda: packaged)
    assert find_vocabulary("o200k_base") == packaged
    assert TiktokenCounter("cl100k_base").count("hello world") == 2
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(nowhere / "env"))
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(nowhere / "gym"))
    assert vocabulary_search_dirs() == [
        nowhere / "env",
        nowhere / "gym",
        nowhere / "tmp" / "data-gym-cache",
        packaged,
    ]
    tiktoken_cache = _copy_vocabularies(bundled, nowhere / "tmp" / "data-gym-cache")
    assert find_vocabulary("o200k_base") == tiktoken_cache  # tiktoken's own cache comes first


def test_nothing_found_says_what_fails_and_how_to_fix_it(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(TokenizerUnavailable) as caught:
        TiktokenCounter("o200k_base").count("hello")
    message = caught.value.message
    assert "fails" in message and "estimate" not in message  # nothing falls back silently
    assert "pip install" in message and "pipx install" in message
    assert "TIKTOKEN_CACHE_DIR" in message and "scripts/bootstrap" in message
    assert O200K.cache_file in message
    assert caught.value.code == -33004


def test_unknown_tokenizer_is_refused() -> None:
    with pytest.raises(TokenizerUnavailable):
        counter_for("p99k_imaginary")


def test_loaded_once_even_when_asked_from_many_threads(
    nowhere: Path, bundled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vocabularies, "packaged_vocabulary_dir", lambda: bundled)
    seen: list[object] = []
    threads = [
        threading.Thread(target=lambda: seen.append(load_encoding("o200k_base"))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(e is seen[0] for e in seen)


def test_special_token_text_counts_as_ordinary_text(bundled: Path) -> None:
    counter = TiktokenCounter("o200k_base")
    assert counter.count("<|endoftext|>") > 1  # not the single special token, and no exception
    assert counter.count("") == 0
    assert counter.count_many(["a b", "<|endofprompt|>"]) == [
        counter.count("a b"),
        counter.count("<|endofprompt|>"),
    ]


# --------------------------------------------------------------------------- cache


class SpyCounter:
    """Wraps the real tokenizer and records every text it was asked to count."""

    def __init__(self) -> None:
        self.real = TiktokenCounter("o200k_base")
        self.counted: list[str] = []

    name = "o200k_base"
    exact = True

    def count(self, text: str) -> int:
        self.counted.append(text)
        return self.real.count(text)


class FakeCountCache:
    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.reads = 0

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        self.reads += 1
        return {k: self.rows[k] for k in keys if k in self.rows}

    def put_many(self, counts: Mapping[str, int]) -> None:
        self.rows.update(counts)


class BrokenCountCache:
    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        raise OSError("database is locked")

    def put_many(self, counts: Mapping[str, int]) -> None:
        raise OSError("database is locked")


# Long enough for the persistent cache (PERSIST_MIN_CHARS); shorter texts stay in memory only.
LONG_A = "def first(x):\n    return x * 2  # a text long enough to be cached\n" * 80
LONG_B = "The second text, also comfortably above the persistent-cache threshold. " * 80


def test_a_text_is_tokenized_once(bundled: Path) -> None:
    spy = SpyCounter()
    cached = CachedCounter(spy, FakeCountCache())
    first = cached.count(LONG_A)
    assert cached.count(LONG_A) == first == spy.real.count(LONG_A)
    assert cached.count_many([LONG_A, LONG_B, LONG_B]) == [first, *[spy.real.count(LONG_B)] * 2]
    assert spy.counted == [LONG_A, LONG_B]


def test_counts_survive_a_restart_through_the_persistent_cache(bundled: Path) -> None:
    store = FakeCountCache()
    before = CachedCounter(SpyCounter(), store).count_many([LONG_A, LONG_B])
    assert all(key.startswith("o200k_base:") and len(key) == 11 + 64 for key in store.rows)
    after_restart = SpyCounter()
    reads = store.reads
    assert CachedCounter(after_restart, store).count_many([LONG_A, LONG_B]) == before
    assert after_restart.counted == []
    assert store.reads == reads + 1  # one round trip for the whole batch


def test_short_texts_skip_the_cache(bundled: Path) -> None:
    store = FakeCountCache()
    assert CachedCounter(SpyCounter(), store).count_many(["ok", ""]) == [1, 0]
    assert store.rows == {}


def test_a_broken_cache_does_not_stop_counting(bundled: Path) -> None:
    spy = SpyCounter()
    assert CachedCounter(spy, BrokenCountCache()).count(LONG_B) == spy.real.count(LONG_B)


def test_counter_for_picks_the_tier(bundled: Path) -> None:
    exact = counter_for("o200k_base", FakeCountCache())
    assert (exact.name, exact.exact) == ("o200k_base", True)
    assert exact.count("hello world") == 2
    assert isinstance(counter_for(None), EstimateCounter)


# --------------------------------------------------------------------------- against real counts


def test_estimate_beats_bytes_over_four_on_this_projects_python(bundled: Path) -> None:
    encoding = load_encoding("o200k_base")
    sources = [p.read_text() for p in sorted(SERVER.rglob("*.py")) if p.stat().st_size > 2000]
    exact = sum(len(encoding.encode_ordinary(s)) for s in sources)
    estimate = sum(estimate_tokens(s) for s in sources)
    naive = sum(len(s.encode()) / 4 for s in sources)
    assert abs(estimate - exact) / exact < 0.08
    assert abs(estimate - exact) < abs(naive - exact)


def test_estimate_of_base64_tracks_the_tokenizer(bundled: Path) -> None:
    binary = next(
        p
        for p in sorted(Path(sysconfig.get_paths()["platlib"]).rglob("*.so"))
        if p.stat().st_size > 200_000
    )
    encoded = base64.b64encode(binary.read_bytes()[100_000:130_000]).decode()
    exact = len(load_encoding("o200k_base").encode_ordinary(encoded))
    assert abs(estimate_tokens(encoded) - exact) / exact < 0.2
    assert abs(len(encoded) / 4 - exact) / exact > 0.3  # what bytes/4 would have said


def test_chat_roles_are_single_tokens_as_the_framing_assumes(bundled: Path) -> None:
    counter = TiktokenCounter("o200k_base")
    assert [counter.count(role) for role in ("system", "user", "assistant", "tool")] == [1, 1, 1, 1]


def test_tool_definitions_cost_more_than_their_names(bundled: Path) -> None:
    counter = TiktokenCounter("o200k_base")
    tool = {
        "name": "read_file",
        "description": "Read a file of the workspace.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    openai = tool_schemas_tokens([{"type": "function", "function": tool}], counter.count, "openai")
    anthropic = tool_schemas_tokens([tool], counter.count, "anthropic")
    assert 20 < openai < 60
    assert anthropic > 346 + counter.count("read_file")


def test_a_loaded_vocabulary_keeps_no_python_copy_and_counts_as_tiktoken():
    """The Encoding tokend loads drops tiktoken's Python copy of the vocabulary (kept only for
    pickling); its counts are those of an Encoding built apart with the copy kept."""
    import tiktoken
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

    loaded = load_encoding("o200k_base")
    with tokenizers._tiktoken_cache_dir(find_vocabulary("o200k_base")):
        apart = tiktoken.Encoding(**ENCODING_CONSTRUCTORS["o200k_base"]())
    assert loaded._mergeable_ranks == {} and len(apart._mergeable_ranks) > 190_000
    texts = ["def f(x):\n    return x ** 2\n", "Grüße, 世界! <|endoftext|> 12345", "a" * 5000]
    for text in texts:
        assert loaded.encode_ordinary(text) == apart.encode_ordinary(text)
