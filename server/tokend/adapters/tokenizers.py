"""Tier 2: exact token counts with tiktoken, from vocabularies found on this machine (no network).

tiktoken keeps a vocabulary in a cache folder under the name sha1(<its download URL>) and checks
its sha256 (tiktoken/load.py, tiktoken_ext/openai_public.py). We look for that file, in order, in
  1. $TIKTOKEN_CACHE_DIR   2. $DATA_GYM_CACHE_DIR   3. tiktoken's default <tmp>/data-gym-cache
  4. the copies tokend ships in tokend/data/tiktoken/ (packaged_data.py: an installed wheel's, or
     a checkout's server/tokend/data/, which scripts/bootstrap takes from the same litellm wheel),
verify the sha256, and build the Encoding with tiktoken's own constructor while TIKTOKEN_CACHE_DIR
points at the folder found (under a lock; restored right after). Nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tokend.adapters.claude_tokens import ClaudeCounter, ctok_installed
from tokend.adapters.packaged_data import VOCABULARIES as VOCABULARIES  # re-exported
from tokend.adapters.vocabularies import find_vocabulary as find_vocabulary  # re-exported
from tokend.adapters.vocabularies import vocabulary_search_dirs as vocabulary_search_dirs
from tokend.core.counting.estimate import EstimateCounter
from tokend.core.errors import TokenizerUnavailable
from tokend.core.models.names import CLAUDE_FAMILIES
from tokend.core.ports import CountCache, TokenCounter
from tokend.core.text_chunks import count_chunks

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- loading, once per process

_load_lock = threading.Lock()
_encodings: dict[str, Any] = {}  # encoding name -> tiktoken.Encoding; loading one takes ~1 s


@contextmanager
def _tiktoken_cache_dir(folder: Path) -> Iterator[None]:
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def load_encoding(encoding_name: str) -> Any:
    """The tiktoken Encoding for `encoding_name`, loaded once per process (thread-safe)."""
    encoding = _encodings.get(encoding_name)
    if encoding is not None:
        return encoding
    with _load_lock:
        encoding = _encodings.get(encoding_name)
        if encoding is None:
            folder = find_vocabulary(encoding_name)
            import tiktoken
            from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

            with _tiktoken_cache_dir(folder):
                encoding = tiktoken.Encoding(**ENCODING_CONSTRUCTORS[encoding_name]())
            # The Encoding keeps a Python dict of the whole vocabulary (200,000 bytes objects
            # for o200k) only to be pickled; its Rust core has its own. tokend never pickles
            # one: dropping the copy makes a loaded o200k 43 MiB instead of 70.
            if isinstance(getattr(encoding, "_mergeable_ranks", None), dict):
                encoding._mergeable_ranks = {}
            _encodings[encoding_name] = encoding
            log.info("loaded the %s vocabulary from %s", encoding_name, folder)
    return encoding


# --------------------------------------------------------------------------- counters


class TiktokenCounter:
    """TokenCounter with a real tiktoken vocabulary (exact). Loads the vocabulary on first use.

    Special-token text such as "<|endoftext|>" counts as ordinary text; counting never raises
    except TokenizerUnavailable when the vocabulary cannot be found."""

    def __init__(self, encoding_name: str) -> None:
        if encoding_name not in VOCABULARIES:
            raise TokenizerUnavailable(
                f"Unknown tokenizer {encoding_name!r}; known: {', '.join(sorted(VOCABULARIES))}.",
                {"tokenizer": encoding_name},
            )
        self._encoding_name = encoding_name

    @property
    def name(self) -> str:
        return self._encoding_name

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        """Tokens of `text`."""
        if not text:
            return 0
        encoding = load_encoding(self._encoding_name)
        if len(text) >= BUFFER_MIN_CHARS:
            return len(encoding.encode_to_numpy(text, disallowed_special=()))
        return len(encoding.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text (tiktoken's batch encoder, several threads; a long one alone)."""
        encoding = load_encoding(self._encoding_name)
        short = [text for text in texts if len(text) < BUFFER_MIN_CHARS]
        counts = iter([len(tokens) for tokens in encoding.encode_ordinary_batch(short)])
        return [next(counts) if len(t) < BUFFER_MIN_CHARS else self.count(t) for t in texts]


# A text this long is encoded to a buffer of ids (encode_to_numpy: encode_ordinary's tokens),
# not a list: building one held the interpreter 48 ms for 8 MB's 2.6 M ids, a buffer < 6 ms.
BUFFER_MIN_CHARS = 1 << 16

# Texts shorter than this skip the cache. Measured (o200k_base, one core): encode 1.7/0.9/1.4/3.3/27 us
# for 4/8/16/32/256 chars vs sha256 + dict lookup 0.8/0.7/0.7/1.0/2.0 us. A hit is always cheaper,
# but below 16 chars a miss costs hash + encode + a persistent row to save ~1.5 us: not worth it.
SHORT_TEXT_CHARS = 16
MEMORY_ENTRIES = 65_536
# Texts shorter than this stay in memory only: tokenizing them again after a restart (~0.3 ms for
# 4 KB) costs about what one SQLite round trip to the persistent cache does, and a session's parts
# keep their counts on their own rows anyway. Measured with bench.service (append path). A slower
# counter sets its own floor (`persist_min_chars`: ClaudeCounter's).
PERSIST_MIN_CHARS = 4096


class CachedCounter:
    """A TokenCounter that never tokenizes the same text twice, also across restarts.

    Keys are "<counter name>:<sha256 hex of the UTF-8 text>" (the CountCache contract). Lookups go
    to an in-memory LRU first, then to the persistent `cache`; new counts are written back. A cache
    that fails is logged and bypassed: counting goes on."""

    def __init__(self, inner: TokenCounter, cache: CountCache | None = None) -> None:
        self._inner = inner
        self._cache = cache
        self._memory: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def exact(self) -> bool:
        return self._inner.exact

    def key(self, text: str) -> str:
        return f"{self._inner.name}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"

    def count(self, text: str) -> int:
        """Tokens of `text`."""
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str], *, kept: bool = False) -> list[int]:
        """Tokens of each text: one persistent-cache read and at most one write for the batch.
        With `kept`, every text's count is kept in the persistent cache whatever its length
        (texts each request repeats: found there after a restart, no vocabulary loaded)."""
        counts: list[int | None] = [None] * len(texts)
        wanted: dict[str, list[int]] = {}  # key -> positions still unknown
        for i, text in enumerate(texts):
            if not text:
                counts[i] = 0
            elif len(text) < SHORT_TEXT_CHARS and not kept:
                counts[i] = self._inner.count(text)
            else:
                wanted.setdefault(self.key(text), []).append(i)
        if wanted:
            floor = 0 if kept else getattr(self._inner, "persist_min_chars", PERSIST_MIN_CHARS)
            durable = {k for k, pos in wanted.items() if len(texts[pos[0]]) >= floor}
            found = self._recall(list(wanted), durable)
            missing = [k for k in wanted if k not in found]
            if missing:
                fresh = self._count_fresh([texts[wanted[k][0]] for k in missing])
                new = dict(zip(missing, fresh, strict=True))
                self._remember(new, persist={k for k in new if k in durable})
                found.update(new)
            for k, positions in wanted.items():
                for i in positions:
                    counts[i] = found[k]
        return [c if c is not None else 0 for c in counts]

    def count_pieces(self, text: str) -> Iterator[int]:
        """A long text's count in parts adding up to it: Claude's own, else count_chunks'."""
        inner = getattr(self._inner, "count_pieces", None)
        known, total = self._recall([key := self.key(text)], {key}), 0
        parts = inner(text) if inner is not None else map(self.count, count_chunks(text))
        for tokens in known.values() or parts:
            total += tokens
            yield tokens
        self._remember({key: total}, persist=set() if known else {key})

    def _count_fresh(self, texts: list[str]) -> list[int]:
        many: Callable[[Sequence[str]], list[int]] | None = getattr(self._inner, "count_many", None)
        if many is not None and len(texts) > 1:
            return list(many(texts))
        return [self._inner.count(t) for t in texts]

    def _recall(self, keys: list[str], durable: set[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        with self._lock:
            for k in keys:
                if k in self._memory:
                    self._memory.move_to_end(k)
                    found[k] = self._memory[k]
        rest = [k for k in keys if k not in found and k in durable]
        if rest and self._cache is not None:
            try:
                stored = self._cache.get_many(rest)
            except Exception as exc:  # a broken cache must not stop counting
                log.warning("count cache read failed, counting directly: %s", exc)
                stored = {}
            stored = {k: int(v) for k, v in stored.items() if k in rest}
            self._remember(stored, persist=set())
            found.update(stored)
        return found

    def _remember(self, counts: dict[str, int], *, persist: set[str]) -> None:
        with self._lock:
            for k, v in counts.items():
                self._memory[k] = v
                self._memory.move_to_end(k)
            while len(self._memory) > MEMORY_ENTRIES:
                self._memory.popitem(last=False)
        if persist and self._cache is not None:
            try:
                self._cache.put_many({k: counts[k] for k in persist})
            except Exception as exc:
                log.warning("count cache write failed: %s", exc)


class ExactTokenizers:
    """The exact tokenizers of this process (service.ports.ExactCounters): tiktoken's
    vocabularies and, with ctok installed, the Claude families; each counter cached."""

    def has_claude_families(self) -> bool:
        return ctok_installed()

    def counter(self, tokenizer: str, cache: CountCache | None) -> CachedCounter:
        """`tokenizer`'s counter; TokenizerUnavailable for an unknown name."""
        if tokenizer in CLAUDE_FAMILIES:
            return CachedCounter(ClaudeCounter(tokenizer), cache)
        return CachedCounter(TiktokenCounter(tokenizer), cache)


def counter_for(tokenizer: str | None, cache: CountCache | None = None) -> TokenCounter:
    """The counter for a catalog tokenizer: "o200k_base"/"cl100k_base" -> cached tiktoken (exact),
    a Claude family ("claude-v3", ...) -> cached ctok (exact, adapters.claude_tokens), None -> the
    estimate. An unknown name raises TokenizerUnavailable."""
    if tokenizer is None:
        return EstimateCounter()
    return ExactTokenizers().counter(tokenizer, cache)
