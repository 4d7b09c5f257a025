"""The inotify watch limit, for real: the watcher runs in a user namespace whose
max_inotify_watches is lowered (`unshare -Ur`: no privilege needed, nothing changed outside),
on a real tree, with real writes. Only the folders that got no watch are polled; a change in a
watched folder and one in a polled folder both arrive; the notice comes once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP_FOLDERS = 30  # root/dN/sub for N < 30: 61 folders
LIMIT = 40  # watches in the namespace: the root, its 30 folders, 9 of the 30 `sub`s

SCRIPT = r"""
import json, sys, threading, time
from pathlib import Path
from tokend.adapters.watcher import FolderWatcher

root = Path(sys.argv[1])
seen, notices = set(), []
arrived = threading.Event()
wanted = {root / "d0" / "a.py", *(root / f"d{n}" / "sub" / "b.py" for n in range(30))}

def on_batch(paths):
    seen.update(paths)
    if wanted & seen == wanted:
        arrived.set()

watcher = FolderWatcher(root, on_batch, notices.append)
watcher.start()
for path in sorted(wanted):
    path.write_text("x = 1\n")
arrived.wait(20)
watcher.stop()
print(json.dumps({
    "polled": [p.relative_to(root).as_posix() for p in watcher.polled],
    "missing": sorted(p.relative_to(root).as_posix() for p in wanted - seen),
    "notices": notices,
}))
"""


def test_only_the_unwatched_folders_are_polled(tmp_path: Path):
    if shutil.which("unshare") is None:
        pytest.fail("this test needs util-linux's `unshare` (user namespaces) to lower the limit")
    tree = tmp_path / "tree"
    for n in range(TOP_FOLDERS):
        (tree / f"d{n}" / "sub").mkdir(parents=True)
    command = (
        f'echo {LIMIT} > /proc/sys/user/max_inotify_watches && exec "{sys.executable}" -c "$0" "$1"'
    )
    done = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", command, SCRIPT, str(tree)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, f"the watcher in a user namespace failed: {done.stderr}"
    report = json.loads(done.stdout)
    polled = report["polled"]
    # 61 folders, 40 watches: the 21 left over are polled, each a leaf `sub`; never the root
    # or a folder that has its watch.
    assert len(polled) == 2 * TOP_FOLDERS + 1 - LIMIT
    assert all(p.startswith("d") and p.endswith("/sub") for p in polled)
    assert report["missing"] == []  # writes in watched and in polled folders all arrived
    assert len(report["notices"]) == 1 and "21 folder(s) left unwatched" in report["notices"][0]


def test_a_workspace_is_polled_whole_when_no_inotify_instance_is_left(tmp_path: Path):
    """fs.inotify.max_user_instances is 0 in the namespace: watchdog's observer cannot start,
    the whole folder is polled, every write arrives, and the notice names the limit to raise."""
    if shutil.which("unshare") is None:
        pytest.fail("this test needs util-linux's `unshare` (user namespaces) to lower the limit")
    tree = tmp_path / "tree"
    for n in range(TOP_FOLDERS):
        (tree / f"d{n}" / "sub").mkdir(parents=True)
    command = (
        f'echo 0 > /proc/sys/user/max_inotify_instances && exec "{sys.executable}" -c "$0" "$1"'
    )
    done = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", command, SCRIPT, str(tree)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, f"the watcher in a user namespace failed: {done.stderr}"
    report = json.loads(done.stdout)
    assert report["polled"] == ["."] and report["missing"] == []
    assert len(report["notices"]) == 1
    assert "raise fs.inotify.max_user_instances" in report["notices"][0]
