"""What one provider sample that CONFIRMS an estimate does to the next estimate of the same text.

A Claude session (no local tokenizer: calibrated estimates) gets a JSON, a CJK or a log tool
result; the provider then reports exactly what the gauge predicted; the same text is appended
again. A calibrator that starts from the estimator's priors learns nothing from a confirmation;
one without priors (main before this change) learnt the neutral 4.0 chars/token. Both trees run
the same script through the service (`service.append`, the gauge's own figures), in separate
processes.

`python -m bench.calibration` prints the section.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.baseline import BASELINE_REV, ROOT, baseline_tree

TEXTS = {
    "json": json.dumps(
        [
            {"id": i, "name": f"item-{i}", "tags": ["alpha", "beta"], "price": i * 1.25}
            for i in range(120)
        ]
    ),
    "cjk": "上下文窗口的令牌数量决定了模型能看到多少内容，压缩会保留用户的原话。" * 40,
    "log": "".join(
        f"2026-11-23T10:{i % 60:02d}:07.123Z INFO  worker-{i % 7} request id={i:06d} status=200 "
        f"took={i % 97}ms\n"
        for i in range(90)
    ),
}

SCRIPT = r"""
import json, sys
from tokend.service.app import open_service
from tokend.core.types import TextPart, ToolCallPart, ToolResultPart, Usage
url, text = sys.argv[1], sys.stdin.read()
s = open_service(None, url)
sid = s.create_session("claude-sonnet-4-5").id
s.append(sid, "user", [TextPart("look at the data")])
s.append(sid, "assistant", [ToolCallPart("c1", "read", {})], usage=Usage(3000, 40))
u0 = s.snapshot(sid).used_tokens
s.append(sid, "tool", [ToolResultPart("c1", "read", text)])
u1 = s.snapshot(sid).used_tokens
s.append(sid, "assistant", [ToolCallPart("c2", "read", {})], usage=Usage(u1, 40))
u2 = s.snapshot(sid).used_tokens
s.append(sid, "tool", [ToolResultPart("c2", "read", text)])
print(json.dumps([u1 - u0, s.snapshot(sid).used_tokens - u2]))
s.close()
"""


def _measure(server_dir: Path, text: str) -> tuple[int, int]:
    with tempfile.TemporaryDirectory(prefix="tokend-cal-") as folder:
        env = {
            **os.environ,
            "PYTHONPATH": str(server_dir),
            "XDG_CONFIG_HOME": folder,
            "XDG_DATA_HOME": folder,
            "XDG_STATE_HOME": folder,
            "XDG_CACHE_HOME": folder,
        }
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, f"sqlite:///{folder}/cal.sqlite3"],
            input=text,
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    first, again = json.loads(done.stdout.strip().splitlines()[-1])
    return first, again


def run() -> str:
    lines = [
        "### One confirming provider sample (bench/calibration.py)\n",
        "claude-sonnet-4-5 (calibrated estimate). The estimate of a tool result, then of the same text",
        "after the provider reported exactly that estimate. Goal: within 5% of the first estimate.\n",
        "| text | tokend: first -> again | change | baseline "
        f"{BASELINE_REV}: first -> again | change |",
        "|---|---|---:|---|---:|",
    ]
    with baseline_tree() as base_dir:
        for name, text in TEXTS.items():
            ours = _measure(ROOT / "server", text)
            row = f"| {name} | {ours[0]:,} -> {ours[1]:,} | {100 * (ours[1] / ours[0] - 1):+.1f}% |"
            if base_dir is None:
                row += " (baseline not available) | |"
            else:
                base = _measure(base_dir / "server", text)
                row += f" {base[0]:,} -> {base[1]:,} | {100 * (base[1] / base[0] - 1):+.1f}% |"
            lines.append(row)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
