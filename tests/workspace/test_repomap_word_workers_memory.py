"""The words' pass after the first map (service.workspace.word_pass) counts by worker processes
that load no tree-sitter and no numpy (adapters.word_workers; issue 22: the tag workers that
counted the kernel's words held 36-38 MiB each beside the daemon while its word table grew, and
the daemon with them passed 500 MB in that pass). Oracles: the files each worker has mapped and
its resident size (/proc), a tag worker's measured in the same test, and text_words of each
file's text for the words counted."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

import tokend
from tokend.adapters import word_workers
from tokend.adapters.tag_parsing import TagParsing
from tokend.adapters.tag_workers import POOL_MIN_FILES, TagWorkers
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.repomap.tags import text_words
from tokend.core.repomap.words import sections
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace.index import WorkspaceIndex
from tokend.service.workspace.word_pass import OwedWords


def _children() -> list[int]:
    pids: list[int] = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as children:
            pids += [int(p) for p in children.read().split()]
    return pids


def _mapped(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps") as maps:
        return {line.split()[-1] for line in maps if "/" in line}


def _program(pid: int) -> str:
    """The module a child runs (`python -m MODULE ...`), or its command line."""
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        argv = cmdline.read().decode(errors="replace").split("\0")
    return argv[argv.index("-m") + 1] if "-m" in argv[:-1] else " ".join(argv)


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1])


def _tree(tmp_path: Path, files: int) -> Path:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    for i in range(files):
        (tree / "pkg" / f"m{i}.py").write_text(
            f"# module {i}: the spindle_{i % 7} rusts when frobnicator quuxes drop\n"
            f"def handler_{i}(value):\n    return helper_{(i + 1) % files}(value) + {i}\n"
        )
    return tree


def _fresh_tag_worker_rss_kib(tree: Path) -> int:
    """A tag worker's resident size once it has counted one file's words (what the words'
    pass used before)."""
    source = (tree / "pkg" / "m0.py").read_bytes()
    with TagWorkers(1) as pool:
        (said,) = pool.count_words([("m0.py", "python", source)])
        assert said is not None and dict(sections(said)[0]) == text_words(source.decode())
        return _rss_kib(pool.pids()[0])


def _pass_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tree: Path
) -> list[list[tuple[set[str], int, str]]]:
    """A real build of `tree` with two tag workers, and at each landing of its words' pass the
    workers of this process then alive (each one's mapped files, VmRSS in KiB and program); the word
    table says what the files say (text_words of each file's text)."""
    seen: list[list[tuple[set[str], int, str]]] = []
    land = OwedWords._land

    def landing(self: OwedWords, *args: object) -> int:
        seen.append([(_mapped(pid), _rss_kib(pid), _program(pid)) for pid in _children()])
        return land(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(OwedWords, "_land", landing)
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )
    index.tags.pool_workers = 2
    try:
        index.build()
        assert index.tags.words_ready.wait(60)
        graph = index.tags._graph
        for row, path in enumerate(graph.paths):
            span = slice(graph.words.offsets[row], graph.words.offsets[row + 1])
            ids, counts = graph.words.ids[span].tolist(), graph.words.counts[span].tolist()
            said = text_words((tree / path).read_text())
            assert dict(zip(ids, counts, strict=True)) == {w: min(n, 255) for w, n in said.items()}
    finally:
        index.close()
    assert [workers for workers in seen if workers], "no worker alive at a landing of the pass"
    return seen


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_the_words_pass_counts_by_workers_without_tree_sitter_or_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At each landing of the pass (its workers alive), every worker of this process maps no
    numpy and no tree-sitter file and is under 3/4 of a tag worker's size; the word table says
    what the files say. Main: the pass's workers were tag workers (numpy mapped, 31 MiB)."""
    tree = _tree(tmp_path, POOL_MIN_FILES + 40)
    tag_worker = _fresh_tag_worker_rss_kib(tree)
    for files, rss, _ in (
        w for landed in _pass_workers(tmp_path, monkeypatch, tree) for w in landed
    ):
        assert not [f for f in files if "numpy" in f or "tree_sitter" in f], files
        assert rss < tag_worker * 3 // 4, (rss, tag_worker)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_the_words_pass_holds_one_word_worker_beside_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two tag workers (pool_workers 2), the words' pass counts by one word worker: at each
    landing the workers alive hold together under 1.5 times one word worker's VmRSS, measured
    in the test once it counted a file (issue 22: on the kernel the two word workers held 21-23
    MiB each beside a daemon of 450-457, whose word table grows in that pass). Main 3342e99:
    two word workers at each landing, about twice one's."""
    tree = _tree(tmp_path, POOL_MIN_FILES + 40)
    source = (tree / "pkg" / "m0.py").read_bytes()
    with TagParsing(threading.Event()).word_pool(1) as pool:
        (said,) = pool.count_words([("m0.py", "python", source)])
        assert said is not None and dict(sections(said)[0]) == text_words(source.decode())
        one = _rss_kib(pool.pids()[0])
    counted = 0
    for landed in _pass_workers(tmp_path, monkeypatch, tree):  # (the word workers alone: CI
        # once found another child of 18 MiB beside one word worker at a landing)
        words = [rss for _, rss, program in landed if program == word_workers.PROGRAM]
        assert sum(words) < one * 3 // 2, (landed, one)
        counted += bool(words)
    assert counted, "no word worker alive at any landing"


def _letters(k: int) -> str:
    return "".join(chr(97 + (k // 26**d) % 26) for d in range(5))


def test_a_word_pools_answers_hold_a_few_bytes_a_word() -> None:
    """250 files of 300 words (a chunk of the words' pass): what the pool's answers hold once
    taken in (tracemalloc), at most 20 bytes a word (an entry: the words, then each file's
    whole tokens, core.repomap.whole); each file's words are text_words of its text. The daemon holds two chunks' answers at a landing. Main: no word pool (the tag
    workers' pool answered dictionaries of Python ints); b950f56's word pool: about 70 bytes
    a word."""
    files, words = 250, 300
    work = [
        (f"f{i}.c", "c", " ".join(_letters(i * words + j) for j in range(words)).encode())
        for i in range(files)
    ]
    with TagParsing(threading.Event()).word_pool(2) as pool:
        pool.count_words(work[:2])  # (the workers started, their pipes' buffers made)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            found = pool.count_words(work)
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    for (_, _, source), said in zip(work, found, strict=True):
        assert said is not None and dict(sections(said)[0]) == text_words(source.decode())
    entries = sum(len(said) for said in found if said is not None)  # (words, MARK, tokens)
    assert held < 20 * entries, held / entries


def test_a_word_worker_imports_no_dataclasses_for_its_count() -> None:
    """The modules a word worker's program loads (a fresh interpreter importing it, as the pool
    starts it): no core.repomap.tags, dataclasses or inspect, which it loaded for WORDS_MAX
    alone (issue 22: 1.2-1.6 MiB of each worker beside the daemon). Main 3342e99: all three.
    Nor hashlib and its OpenSSL (about 4 MiB), which core.repomap.keys imported for the keys a
    word worker never makes (main 38ed486 loaded both)."""
    server = Path(tokend.__file__).resolve().parents[1]
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, {word_workers.PROGRAM}; print(*sys.modules)"],
        env={**os.environ, "PYTHONPATH": str(server)}, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert word_workers.PROGRAM in loaded
    assert {"tokend.core.repomap.tags", "dataclasses", "inspect"}.isdisjoint(loaded)
    assert {"hashlib", "_hashlib"}.isdisjoint(loaded)


def _big_source(seed: int) -> bytes:
    """1 MiB of C-like lines whose identifiers are mostly new (the daemon's limit of a file)."""
    rng, lines, size = random.Random(seed), [], 0
    while size < 1 << 20:
        name = "_".join(rng.choice(("dev", "priv", "skb", "netif", "reg")) for _ in range(2))
        name += str(rng.randrange(50_000))
        lines.append(
            f"static int {name}(struct s *{name}x) {{ return Camel{rng.randrange(9999)}; }}\n"
        )
        size += len(lines[-1])
    return "".join(lines).encode()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_word_worker_gives_its_heap_back_after_big_files() -> None:
    """A word worker's VmRSS after counting six different sources of 1 MiB, each time, stays
    under 7.5 MiB above its own once it counted a small file: glibc's mmap and trim
    thresholds at 128 KiB in the word workers (issue 22: beside the daemon in the words'
    pass). Each count is text_words's. Main 3342e99 (the tag workers' 1 and 4 MiB): 8.9-9.2
    MiB above after the sixth (6.1 now)."""
    sources = [_big_source(seed) for seed in range(6)]
    with TagParsing(threading.Event()).word_pool(1) as pool:
        assert pool.count_words([("a.c", "c", b"int main(void) { return 0; }\n")])
        rest = _rss_kib(pool.pids()[0])
        above = []
        for source in sources[:2]:
            [said] = pool.count_words([("b.c", "c", source)])
            assert said is not None and dict(sections(said)[0]) == text_words(source.decode())
            above.append(_rss_kib(pool.pids()[0]) - rest)
        for source in sources[2:]:
            assert pool.count_words([("b.c", "c", source)])[0] is not None
            above.append(_rss_kib(pool.pids()[0]) - rest)
    assert max(above) < 7.5 * 1024, above


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_word_worker_that_grew_is_replaced_by_a_fresh_one() -> None:
    """Twelve different sources of 1 MiB counted one after the other by a word pool of one: the
    worker counting is never more than 5.5 MiB above the first one's size after a small file
    (a word worker grown by GROWTH_BYTES retires after its batch: issue 22, on the kernel one
    grew from 16 to 21 MiB over the words' pass). Each count is text_words's. c829213 (the
    heap's thresholds alone): 6.2 MiB above; main 3342e99: 9.0."""
    with TagParsing(threading.Event()).word_pool(1) as pool:
        assert pool.count_words([("a.c", "c", b"int main(void) { return 0; }\n")])
        rest, above = _rss_kib(pool.pids()[0]), []
        for seed in range(12):
            source = _big_source(seed)
            [said] = pool.count_words([("b.c", "c", source)])
            assert said is not None and dict(sections(said)[0]) == text_words(source.decode())
            above.append(_rss_kib(pool.pids()[0]) - rest)
    assert max(above) < 5.5 * 1024, above
