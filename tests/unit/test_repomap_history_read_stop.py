"""service.workspace.history_read through its seams (the index ports' `history` and
`history_mark`, fakes here): a history that moved is read again for a later map, and a read a
stop cut short leaves the graph's history as it was."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tokend.core.repomap.graph import RepoGraph
from tokend.service.workspace.history_read import HistoryRead
from tokend.service.workspace.tree_ports import IndexPorts


def reader(graph: RepoGraph, answers: list[list[list[str]]], mark: list[int],
           stopping: threading.Event, stop_on_read: int | None = None) -> HistoryRead:  # fmt: skip
    reads = iter(answers)

    def read(root: Path, stop: threading.Event) -> list[list[str]]:
        got = next(reads)
        if stop_on_read is not None and got is answers[stop_on_read]:
            stop.set()  # (the daemon stops while git reads: git is killed, nothing read)
            return []
        return got

    ports: Any = IndexPorts(None, None, None, history=read, history_mark=lambda root: mark[0])
    return HistoryRead(ports, Path("."), stopping, lambda: graph, threading.RLock())


def test_a_history_that_moved_is_read_again_for_a_later_map() -> None:
    graph, mark, stopping = RepoGraph(), [1], threading.Event()
    history = reader(
        graph, [[["a.py", "b.py"]], [["a.py", "c.py"], ["a.py", "b.py"]]], mark, stopping
    )
    history.fresh(wait=True)
    assert graph.history.commits == (("a.py", "b.py"),)
    history.fresh(wait=False)  # the history did not move: no read
    mark[0] = 2  # a commit
    history.fresh(wait=False)  # this map: the history before; a read begun
    assert graph.history.commits == (("a.py", "b.py"),)
    history.wait()
    history.fresh(wait=False)
    assert graph.history.commits == (("a.py", "c.py"), ("a.py", "b.py"))


def test_a_read_a_stop_cut_short_leaves_the_history() -> None:
    graph, mark, stopping = RepoGraph(), [1], threading.Event()
    history = reader(
        graph, [[["a.py", "b.py"]], [["x.py", "y.py"]]], mark, stopping, stop_on_read=1
    )
    history.fresh(wait=True)
    mark[0] = 2
    history.fresh(wait=False)
    history.wait()
    history.fresh(wait=False)
    assert stopping.is_set() and graph.history.commits == (("a.py", "b.py"),)
