"""A workspace file is read into a buffer of its own size, not of a fixed megabyte
(adapters.workspace_reads.read_rest; issue 22). The daemon fixes malloc's mmap threshold at
1 MiB (daemon.process.return_big_blocks_to_the_system), so a megabyte buffer a read was mapped,
touched and unmapped again for every file: the kernel's first map spent 2.6 of its build
thread's CPU seconds so on 56,000 sources.

The oracle is the kernel's count of page faults (getrusage's minor faults) of a process that
has the daemon's malloc settings, while it reads small files it has read once before: memory
from malloc's heap, freed and taken again, faults no more; a mapped buffer faults at least once
for each read. Counts, not time. And the bytes are the ones written, whatever the size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tokend.adapters import workspace_fs

SERVER = Path(__file__).resolve().parents[2] / "server"
FILES = 1200

_PROBE = """
import json, resource, sys
from pathlib import Path
from tokend.adapters.heap import one_arena
from tokend.daemon.process import return_big_blocks_to_the_system
one_arena()
return_big_blocks_to_the_system()  # the daemon's malloc settings, as `tokend serve` has them
from tokend.adapters import workspace_fs
root, paths = Path(sys.argv[1]), json.loads(sys.argv[2])

def through_reader():
    with workspace_fs.reader(root) as read:
        return sum(len(read(p)) for p in paths)

def one_by_one():
    return sum(len(workspace_fs.read_bytes(root, p)) for p in paths)

faults = {}
for name, read_all in (("reader", through_reader), ("read_bytes", one_by_one)):
    read_all()  # the heap grown once
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    read_all()
    faults[name] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps(faults))
"""


def _small_files(root: Path) -> list[str]:
    """FILES files of 200 bytes to 6 KB (the kernel's median source is about 7 KB) in 12
    folders, in path order."""
    paths = []
    for i in range(FILES):
        path = f"d{i % 12:02d}/f{i:04d}.c"
        (root / path).parent.mkdir(exist_ok=True)
        (root / path).write_bytes(b"x" * (200 + (i * 37) % 6000))
        paths.append(path)
    return sorted(paths)


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc and Linux's fault counts")
def test_reading_small_files_maps_no_buffer_a_file(tmp_path: Path) -> None:
    paths = _small_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(SERVER)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path), json.dumps(paths)],
        env=env, capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    faults = json.loads(done.stdout)
    # a buffer mapped for each read faults at least once a file (two reads a file: the
    # end-of-file read mapped a megabyte too); the heap's buffers, taken again, do not
    assert faults["reader"] < FILES // 10, faults
    assert faults["read_bytes"] < FILES // 10, faults


def test_the_bytes_read_are_the_files_whatever_their_size(tmp_path: Path) -> None:
    sizes = [0, 1, 4095, 4096, 65536, 65537, (1 << 20) - 1, 1 << 20, (1 << 20) + 7, 3 << 20]
    written = {}
    for size in sizes:
        written[f"f{size}.c"] = os.urandom(size)
        (tmp_path / f"f{size}.c").write_bytes(written[f"f{size}.c"])
    with workspace_fs.reader(tmp_path) as read:
        assert {path: read(path) for path in sorted(written)} == written
    for path, data in written.items():
        assert workspace_fs.read_bytes(tmp_path, path) == data
        # at most `limit` + 1 bytes, as a caller that refuses big files asks
        assert workspace_fs.read_bytes(tmp_path, path, limit=5000) == data[:5001]


def test_a_file_that_grows_after_it_was_opened_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "grows.c"
    path.write_bytes(b"a" * 1000)
    with workspace_fs.open_file(tmp_path, "grows.c") as opened:  # its size taken: 1,000
        more = b"b" * 200_000
        with path.open("ab") as appending:
            appending.write(more)
        assert workspace_fs.read_opened(opened) == b"a" * 1000 + more
