"""Tags parsed in worker processes (issue 22): the same tags and the same map as the daemon's
own thread gives, a worker that dies costs one file its tags and nothing else, and a small
refresh starts no worker at all."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from tokend.adapters import tag_parsing, tag_proc, tag_workers
from tokend.adapters.tag_wire import tags_json
from tokend.adapters.tag_workers import POOL_MIN_FILES, TagWorkers
from tokend.adapters.tags import TagParser
from tokend.adapters.workspace_cache import WorkspaceCache
from tokend.core.errors import Stopping
from tokend.core.repomap.graph import Focus
from tokend.service.app_workspaces import index_ports
from tokend.service.workspace import tags as workspace_tags
from tokend.service.workspace.index import WorkspaceIndex

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "server" / "tokend"


def _source_work() -> list[tuple[str, str, bytes]]:
    files = sorted(SOURCE.rglob("*.py"))
    return [(p.relative_to(ROOT).as_posix(), "python", p.read_bytes()) for p in files]


def test_the_workers_give_the_tags_the_parser_gives() -> None:
    work = _source_work()
    parser = TagParser()
    expected = [parser.tags(language, source) for _, language, source in work]
    with TagWorkers(2) as workers:
        got = workers.parse(work)
    assert len(got) == len(expected) > 100
    assert got == expected
    assert sum(len(t.definitions) for t in got) > 1000  # real tags, not empties


def test_a_worker_past_its_memory_bound_retires_and_nothing_is_lost() -> None:
    work = _source_work()
    parser = TagParser()
    with TagWorkers(2, rss_limit=1) as workers:  # every worker retires after its first batch
        got = workers.parse(work)
        assert workers.started >= len(work) // tag_workers.BATCH_FILES - 2
        assert workers.crashes == 0
    assert got == [parser.tags(language, source) for _, language, source in work]


def test_the_last_files_of_a_chunk_go_out_a_few_at_a_time(monkeypatch) -> None:
    """A build's chunk of 500 small files for 2 real workers: whole batches first, then
    smaller ones, the last two of one file each, so at the chunk's end neither worker sits idle
    while the other parses a whole batch (the next chunk takes a worker only once this one's
    batches are all sent).
    Main: the last two batches sent were 16 and 4 files."""
    sent: list[list[int]] = []

    def recording(stream, value):  # the daemon's side of the pipe: what each batch held
        if isinstance(value, list):
            sent.append([index for index, *_ in value])
        real_send(stream, value)

    real_send = tag_proc.send
    monkeypatch.setattr(tag_proc, "send", recording)
    work = [(f"f{i}.c", "c", b"int f%d(void) { return g(); }\n" % i) for i in range(500)]
    with TagWorkers(2) as workers:
        got = workers.parse_packed(work)
    assert all(text.startswith('{"d":[["f') for text, _, _ in got)  # each file's own tags
    assert sorted(i for batch in sent for i in batch) == list(range(500))  # each file once
    assert len(sent[0]) == tag_workers.BATCH_FILES
    assert [len(batch) for batch in sent[-2:]] == [1, 1]
    left = 500  # no batch held more than a worker's share of the files still to go
    for batch in sent:
        assert len(batch) <= max(1, left // 2)
        left -= len(batch)


def _tree(tmp_path: Path) -> Path:
    """tokend's own source, and enough small files that a build starts the pool."""
    tree = tmp_path / "tree"
    shutil.copytree(SOURCE, tree / "tokend", ignore=shutil.ignore_patterns("data", "*.pyc"))
    for i in range(POOL_MIN_FILES):
        (tree / "gen").mkdir(exist_ok=True)
        (tree / "gen" / f"g{i}.py").write_text(f"def gen_{i}(x):\n    return load_session(x)\n")
    return tree


def _map(tree: Path, cache: Path, workers: int) -> tuple[str, dict[str, str], int]:
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(cache), index_ports())
    index.tags.pool_workers = workers
    started = []
    real = tag_parsing.TagWorkers

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, size: int | None = None, **options: object) -> None:
            started.append(size)
            super().__init__(size, **options)

    tag_parsing.TagWorkers = Counted  # type: ignore[misc]
    try:
        index.build()
    finally:
        tag_parsing.TagWorkers = real  # type: ignore[misc]
    count = len  # characters: the same counter on both sides
    text = ""
    for focus in (
        Focus(frozenset({"tokend/service/service.py"}), frozenset(), ""),
        Focus(frozenset(), frozenset({"load_session"}), "load the session"),
    ):
        text += index.tags.repo_map(focus, 2048, count, "chars").text
    errors = dict(index.tags.errors)
    index.close()
    return text, errors, len(started)


def test_a_build_with_workers_makes_the_map_a_single_process_makes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    alone, alone_errors, alone_pools = _map(tree, tmp_path / "one.sqlite3", 0)
    pooled, pooled_errors, pools = _map(tree, tmp_path / "two.sqlite3", 2)
    # the second build did use worker processes: a pool for the tags, then one for the words
    assert (alone_pools, pools) == (0, 2)
    # A real map (which definitions rank first follows tokend's own source as it changes).
    assert "def " in alone and alone.count("\n") > 50
    assert pooled == alone
    assert pooled_errors == alone_errors


def test_every_chunk_of_a_big_refresh_goes_to_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found (issue 22, py-spy on the daemon during the kernel's first map): a chunk holds at
    most 8 MB of source, so a chunk of big C files held fewer than POOL_MIN_FILES files and
    was parsed in the daemon's own thread, the worker processes started for the build idle."""
    try:  # where the chunk size lives (tags.py before the chunks had a module of their own)
        from tokend.service.workspace import tag_chunks as chunking
    except ImportError:
        chunking = workspace_tags  # type: ignore[misc]
    monkeypatch.setattr(chunking, "CHUNK_FILES", POOL_MIN_FILES // 4)  # as a byte-bound chunk
    tree = _tree(tmp_path)
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.tags.pool_workers = 2
    in_thread: list[str] = []
    real = index.tags._tagging.parser.tags

    def counted(language: str, source: bytes) -> object:
        in_thread.append(language)
        return real(language, source)

    index.tags._tagging.parser.tags = counted  # type: ignore[method-assign, assignment]
    index.build()
    files = sum(1 for _ in tree.rglob("*.py"))
    assert files > POOL_MIN_FILES
    assert in_thread == []  # on main: every file, in chunks of POOL_MIN_FILES // 4
    assert "gen_7" in index.tags.repo_map(Focus(frozenset(), frozenset({"gen_7"}), ""), 1024,
                                          len, "chars").text  # fmt: skip
    index.close()


def test_a_small_tree_starts_no_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "small"
    tree.mkdir()
    for i in range(20):
        (tree / f"m{i}.py").write_text(f"def small_{i}():\n    return {i}\n")

    def refuse(*args: object) -> None:
        raise AssertionError("a pool was started for 20 files")

    monkeypatch.setattr(tag_parsing, "TagWorkers", refuse)
    index = WorkspaceIndex(
        tree.as_uri(), tree, WorkspaceCache(tmp_path / "c.sqlite3"), index_ports()
    )
    index.build()
    focus = Focus(frozenset(), frozenset({"small_3"}), "")
    assert "small_3" in index.tags.repo_map(focus, 1024, len, "chars").text
    index.close()


def test_a_worker_killed_on_a_file_costs_that_file_its_tags(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A 1 MB buffer of prose takes tree-sitter seconds; the worker parsing it is killed (what
    # the OOM killer or a crashing grammar does). It is alone in its batch (BATCH_BYTES).
    words = b"the quick brown fox jumps over the lazy dog 0123456789 "
    slow = (words * ((1 << 20) // len(words)))[: (1 << 20) - 100]
    work = [("slow.py", "python", slow), *_source_work()]
    parser = TagParser()
    with TagWorkers(2) as workers:
        got: list[object] = []
        thread = threading.Thread(target=lambda: got.extend(workers.parse(work)))
        thread.start()
        time.sleep(0.5)
        first = workers.pids()[0]  # the first batch (the slow file) went to the first worker
        os.kill(first, signal.SIGKILL)
        thread.join(120)
        assert not thread.is_alive()
        assert first not in workers.pids()  # replaced
        assert workers.crashes == 1
    assert got[0].error.startswith(tag_workers.WORKER_DIED)  # type: ignore[attr-defined]
    assert got[1:] == [parser.tags(language, source) for _, language, source in work[1:]]
    assert "slow.py" in caplog.text


def test_the_worker_exits_when_its_parent_goes(tmp_path: Path) -> None:
    """The worker's own guard: its stdin closed (the daemon gone) ends it."""
    worker = tag_workers._Worker()
    worker.stdin.close()
    assert worker.proc.wait(10) == 0
    worker.stdout.close()


def test_closing_the_workspace_stops_a_parse_under_way_and_its_workers() -> None:
    words = b"the quick brown fox jumps over the lazy dog 0123456789 "
    slow = (words * ((1 << 20) // len(words)))[: (1 << 20) - 100]
    work = [(f"slow{i}.py", "python", slow) for i in range(8)]  # many seconds of parsing
    stopping = threading.Event()
    workers = TagWorkers(2, stopping=stopping)
    raised: list[BaseException] = []

    def parse() -> None:
        try:
            workers.parse(work)
        except Stopping as exc:
            raised.append(exc)

    thread = threading.Thread(target=parse)
    thread.start()
    time.sleep(1.0)
    pids = workers.pids()
    assert len(pids) == 2
    began = time.monotonic()
    stopping.set()
    thread.join(10)
    assert not thread.is_alive() and raised  # gave up, in about STOP_POLL_S
    assert time.monotonic() - began < 5
    assert workers.pids() == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # ended and reaped


def test_a_big_source_is_parsed_by_a_worker_of_its_own() -> None:
    """Issue 17's fuzz: a .py buffer of 1 MB of words, parsed in the daemon's thread, held the
    event loop 44-65 ms at a time (tree-sitter's progress callback, where the interpreter
    changes hands, comes rarely while it recovers from errors). A source over SOLO_BYTES goes to
    a worker process even for a refresh of one file; the tags are the ones the thread gives."""
    words = b"the quick brown fox jumps over the lazy dog 0123456789 "
    big = (words * (tag_parsing.SOLO_BYTES // len(words) + 2))[: tag_parsing.SOLO_BYTES + 100]
    big = b"def start(port):\n    return port\n\n" + big
    small = b"def stop():\n    return 1\n"
    work = [("a.py", "python", small), ("big.py", "python", big), ("b.py", "python", small)]
    expected = [TagParser().tags(language, source) for _, language, source in work]
    in_thread: list[int] = []

    class Watched(TagParser):
        def raw(self, language: str, source: bytes, words: bool = True):  # type: ignore[no-untyped-def]
            in_thread.append(len(source))
            return super().raw(language, source, words)

    got = tag_parsing.parse_all_json(Watched(), work, None)
    assert got == [tags_json(tags) for tags in expected]
    assert any(d.name == "start" for d in expected[1].definitions)
    assert in_thread == [len(small), len(small)]  # the big one was not parsed in this thread


def test_a_pooled_build_packs_no_file_in_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found (issue 22, py-spy on the daemon during the kernel's first map): a third of the
    build thread was PackedTags.of (a digest and a regular expression per name) and decoding the
    workers' JSON. The workers pack the tags they parse; the daemon packs none (main: every
    file), and the map is the one a single process makes (above)."""
    from tokend.core.repomap import packed as repomap_packed

    tree = _tree(tmp_path)
    packed_here: list[int] = []
    real = repomap_packed.PackedTags.of.__func__  # type: ignore[attr-defined]

    def counted(cls: type, tags: object) -> object:
        packed_here.append(1)
        return real(cls, tags)

    monkeypatch.setattr(repomap_packed.PackedTags, "of", classmethod(counted))
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.tags.pool_workers = 2
    index.build()
    files = sum(1 for _ in tree.rglob("*.py"))
    assert files > POOL_MIN_FILES
    assert len(index.tags._graph.table.paths) == files
    assert packed_here == []
    focus = Focus(frozenset(), frozenset({"gen_7"}), "")
    assert "gen_7" in index.tags.repo_map(focus, 1024, len, "chars").text
    index.close()


def test_saves_of_a_big_file_reuse_one_worker_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found (issue 22): each save of a source over SOLO_BYTES started a worker process of its
    own (an interpreter and the grammars: 0.3-0.8 s on the shared machine), an edit loop paying
    it every time. The build and three saves now start one process (main: four), each save's tags are in,
    and closing the workspace ends the worker."""
    tree = tmp_path / "big"
    tree.mkdir()
    filler = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(12_000))
    big = tree / "big.py"
    started: list[int] = []
    real = tag_workers._Worker.__init__

    def counted(self: object, *args: object, **kwargs: object) -> None:
        started.append(1)
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tag_workers._Worker, "__init__", counted)
    big.write_text(filler)
    assert big.stat().st_size > tag_parsing.SOLO_BYTES
    index = WorkspaceIndex(tree.as_uri(), tree, WorkspaceCache(None), index_ports())
    index.build()
    for n in range(3):
        big.write_text(f"def saved_{n}(port):\n    return port\n\n" + filler)
        index.apply_changes([big])
        assert index.tags.defines(f"saved_{n}")
    pids = [w.proc.pid for w in _solo_processes(index)]
    assert len(started) == 1  # the first build and the three saves (main: one each, 4)
    index.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # ended and reaped


def _solo_processes(index: WorkspaceIndex) -> list[tag_workers._Worker]:
    solo = index.tags._tagging.solo  # type: ignore[attr-defined]
    workers = getattr(solo, "_workers", None)
    return list(workers._workers) if workers is not None else []


def test_workers_yield_the_cpu_to_the_daemon() -> None:
    """Issue 22: with every chunk of the kernel's build parsed by two workers on a 2-core
    machine, the daemon's threads (every connection's requests, the file index's reply, the
    build thread feeding the workers) got the CPU no sooner than the workers. The workers run
    nicer than the daemon (main: at its priority)."""
    with TagWorkers(2) as workers:
        workers.parse(_source_work()[:4])
        niceness = [os.getpriority(os.PRIO_PROCESS, pid) for pid in workers.pids()]
    assert len(niceness) == 2
    assert min(niceness) >= os.getpriority(os.PRIO_PROCESS, 0) + 5
