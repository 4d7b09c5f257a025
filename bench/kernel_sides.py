"""bench/kernel's daemon (bench.kernel._one_daemon: cold, the walk, the first map, the words'
pass, map requests, changes) for this tree and one or more revisions, one after the other, the
tree read once before them; without the parse rates and the workers' CPU, so that three daemons
fit a quiet slot. `python -m bench.kernel_sides [here] REV ...` (in the order given; `here` is
this tree) prints a table: each phase's high of the daemon with its workers (0.2 s samples) and
of the daemon alone (20 ms), the seconds of the first map, of the words' pass and of the map
requests (issue 22: the words' pass's peak, peak1)."""

from __future__ import annotations

import contextlib
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.baseline import baseline_tree
from bench.kernel import _one_daemon, kernel_tree, warm_page_cache

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("the tags and the first map", "map requests", "the words", "changes")


@contextlib.contextmanager
def _server(rev: str) -> Iterator[Path]:
    if rev == "here":
        yield ROOT / "server"
        return
    with baseline_tree(rev) as tree:
        assert tree is not None, f"{rev}: not in this clone"
        yield tree / "server"


def _family(r: dict[str, Any], phase: str) -> str:
    got = r["phase_peaks"].get(phase)
    if got is None:
        return "-"
    rss, own, children = got
    return f"{rss:.0f} ({' + '.join(f'{x:.0f}' for x in [own, *children])})"


def _row(rev: str, r: dict[str, Any]) -> str:
    fine = r.get("fine_peaks", {})
    alone = " / ".join(f"{fine[p]:.0f}" if p in fine else "-" for p in PHASES)
    words_s = r["said_s"] - r["first_map_s"]
    return (
        f"| {rev} | {' / '.join(_family(r, p) for p in PHASES)} | {alone} | "
        f"{r['rss_built']:.0f} / {r['rss_end']:.0f} | {r['first_map_s']:.1f} | {words_s:.1f} | "
        f"{statistics.median(r['focus']):.3f} / {statistics.median(r['text']):.3f} / "
        f"{statistics.median(r['changed']):.3f} | {r['map_tokens']:,} |"
    )


def run(revs: list[str]) -> str:
    tree = kernel_tree()
    warm_page_cache(tree)
    rows = [
        "| code | the daemon with its workers, every 0.2 s: the tags and the first map / map "
        "requests / the words / changes, MiB | the daemon alone, every 20 ms, the same phases, "
        "MiB | the daemon after the first map / at the end, MiB | first map, s | the words' "
        "pass, s | a new focus / a text focus / the map after a change (medians), s | map "
        "tokens |",
        "|---|---|---|---|---:|---:|---|---:|",
    ]
    for rev in revs:
        with _server(rev) as server:
            rows.append(_row(rev, _one_daemon(server, tree)))
        print(rows[-1], file=sys.stderr, flush=True)
    return "\n".join(rows)


if __name__ == "__main__":
    print(run(sys.argv[1:] or ["here"]))
