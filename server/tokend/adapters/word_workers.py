"""A worker process that counts what files say (core.repomap.text.count_words) for the words'
pass after the first map (service.workspace.word_pass), driven by the same pool as the tag
workers (adapters.tag_workers.TagWorkers, `program=PROGRAM`), answering a file at a time (its
pool reads that frame beside a tag worker's frame of a whole batch); a file's words as the bytes of two arrays of 32-bit integers (its ids and their counts, in the
order counted), which the daemon reads as core.repomap.words.SaidArrays.

It imports nothing but the count and its pipes: no tree-sitter, no grammar, no numpy (which a
tag worker imports for its packing). On the kernel a tag worker counting words held 36-38 MiB,
two of them beside the daemon while its word table grows (issue 22: the daemon and its workers
together passed 500 MB in that pass); one of these holds about half of that.
"""

from __future__ import annotations

import os
import sys
import threading
from array import array
from typing import Any

from tokend.adapters.worker_pipe import recv, rss_bytes, send, watch_parent
from tokend.core.repomap.text import count_words

PROGRAM = "tokend.adapters.word_workers"
WORKER_NICE = 10  # adapters.tag_workers's: the daemon's threads go first
GROWTH_BYTES = 4 << 20  # a worker this much above its size once started retires after a batch
# (issue 22: on the kernel one grew from 16 to 21 MiB over the words' pass, freed blocks of the
# files it counted scattered in its heap; a fresh one starts in about 0.1 s)


def main() -> None:
    """Each batch's files (index, language, source, what, whole: whether their count carries
    their whole tokens, core.repomap.text.count_words) answered one by one as the tag workers
    answer (index, "", the file's words, retiring); ends at the end of its input, or after a
    batch once its resident size passed the limit the daemon gave or grew by more than
    GROWTH_BYTES since it started (a fresh one follows)."""
    rss_limit = min(int(sys.argv[1]), rss_bytes() + GROWTH_BYTES)
    try:
        os.nice(WORKER_NICE)
    except OSError:  # not allowed here: it counts at the daemon's priority
        pass
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            batch: list[Any] = recv(stdin)
        except EOFError:
            return
        for n, (index, _language, source, *what) in enumerate(batch, 1):  # (what, whole)
            words = count_words(source, what[1:] != [False])
            # sent as the bytes of its ids and of its counts
            packed = (array("I", words).tobytes(), array("I", words.values()).tobytes())
            retiring = n == len(batch) and rss_bytes() > rss_limit
            send(stdout, (index, "", packed, retiring))
            del words, packed
            if retiring:
                return


if __name__ == "__main__":
    main()
