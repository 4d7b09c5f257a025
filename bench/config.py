"""Reading the settings: the user's config.toml and a workspace's .tokend.toml merged into the
settings, as the daemon does when a file changes and a CLI command does once.

Each figure is measured in fresh processes, alternating this tree and main before the config
checks moved into the dataclasses' types (BEFORE_CONFIG_REV), on the same two files:
- first merge, cold: the first `load_config` of a process that has not imported cattrs (a CLI
  command that reads the settings and nothing else);
- first merge, cattrs loaded: the same after `import cattrs`, as in the daemon (the wire
  layer imports it before any settings are read);
- warm merge: the median of 200 further merges in that process (a reload after a change);
- `tokend config --json` in the workspace, the whole process, wall-clock.
Milliseconds; medians over the processes. `python -m bench.run config` prints the section.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.baseline import baseline_tree

ROOT = Path(__file__).resolve().parents[1]
BEFORE_CONFIG_REV = "9f76291"
PROCESSES = 9
USER_FILE = """idle_timeout_s = 120
log_level = "debug"
[budget]
output_reserve_cap = 16000
safety_margin_ratio = 0.1
[compaction]
protected_tools = ["skill", "todo"]
[spend]
session_usd = 5
timezone = "Europe/Paris"
[checkpoints]
retention_days = 7
[telemetry]
exporters = ["otlp"]
[summarizer]
chain = ["openai", "extractive"]
openai_model = ["small", "big"]
"""
WORKSPACE_FILE = """[budget]
output_reserve_cap = 8000
repo_map_min_tokens = 2000
[tool_output]
single_result_chars = "big"
[models."acme-coder-7"]
context_window = 64000
"""
MEASURE = r"""
import json, sys, time
from pathlib import Path
if sys.argv[2] == "warm-cattrs":
    import cattrs  # noqa: F401
from tokend.adapters.config_files import load_config
folder = Path(sys.argv[1])
start = time.perf_counter()
config, warnings = load_config(folder, user_path=folder / "config.toml", environ={})
first = time.perf_counter() - start
runs = []
for _ in range(200):
    start = time.perf_counter()
    load_config(folder, user_path=folder / "config.toml", environ={})
    runs.append(time.perf_counter() - start)
print(json.dumps([first * 1000, statistics.median(runs) * 1000, len(warnings)]))
""".replace("import json, sys, time", "import json, statistics, sys, time")


def _measure(tree: Path, folder: Path, mode: str) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(folder), mode],
        env={"PYTHONPATH": str(tree / "server"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return [float(x) for x in json.loads(done.stdout)]


def _config_command(tree: Path, folder: Path) -> float:
    env = {
        "PYTHONPATH": str(tree / "server"),
        "PATH": "/usr/bin:/bin",
        "XDG_CONFIG_HOME": str(folder / "xdg"),
        "XDG_DATA_HOME": str(folder / "data"),
        "XDG_STATE_HOME": str(folder / "state"),
    }
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tokend", "config", "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        check=True,
    )
    return (time.perf_counter() - start) * 1000


def run() -> str:
    with baseline_tree(BEFORE_CONFIG_REV) as before, tempfile.TemporaryDirectory() as tmp:
        if before is None:
            raise RuntimeError(f"this clone lacks {BEFORE_CONFIG_REV}")
        folder = Path(tmp)
        (folder / "config.toml").write_text(USER_FILE)
        (folder / ".tokend.toml").write_text(WORKSPACE_FILE)
        (folder / "xdg" / "tokend").mkdir(parents=True)
        (folder / "xdg" / "tokend" / "config.toml").write_text(USER_FILE)
        trees = {"this tree": ROOT, f"main {BEFORE_CONFIG_REV}": before}
        cold: dict[str, list[list[float]]] = {name: [] for name in trees}
        loaded: dict[str, list[list[float]]] = {name: [] for name in trees}
        command: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(PROCESSES):
            for name, tree in trees.items():
                cold[name].append(_measure(tree, folder, "cold"))
                loaded[name].append(_measure(tree, folder, "warm-cattrs"))
                command[name].append(_config_command(tree, folder))
    rows = []
    for name in trees:
        first_cold = statistics.median(r[0] for r in cold[name])
        first_loaded = statistics.median(r[0] for r in loaded[name])
        warm = statistics.median(r[1] for r in cold[name] + loaded[name])
        warnings = int(cold[name][0][2])
        shown = statistics.median(command[name])
        rows.append(
            f"| {name} | {first_cold:.1f} | {first_loaded:.1f} | {warm:.3f} | {shown:.0f} |"
            f" {warnings} |"
        )
    return "\n".join(
        [
            "### Reading the settings files (bench/config.py)",
            "",
            "A user config.toml setting 11 keys (2 at the top, 9 in 6 tables) and a workspace"
            " .tokend.toml setting 4 (one invalid; [checkpoints] applies on this tree only,"
            f" ignored with a warning on main). Milliseconds, medians of {PROCESSES} fresh processes per tree and mode,"
            " run alternately.",
            "",
            "| tree | first merge, cold | first merge, cattrs loaded (daemon) | warm merge |"
            " `tokend config --json` | warnings |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            "The cold first merge pays cattrs' import once per process; the daemon has imported it"
            " already (its wire layer). A reload after a file change is a warm merge.",
        ]
    )


if __name__ == "__main__":
    print(run())
