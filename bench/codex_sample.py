"""A generated Codex CLI rollout, sized like a real session, for the benches.

There is no real Codex rollout in the shared data, so the benches write one in the format Codex
CLI documents and writes (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, one
`{timestamp, type, payload}` record a line: `session_meta`, `turn_context`, `response_item`s,
`event_msg`s with a `token_count` after each model response, `compacted` when Codex compacts).
What it holds is GENERATED, and said so wherever a figure from it is quoted: the user prompts
and the model's texts are short made-up sentences, each tool call a shell command whose output
is a slice of this repository's own source files (real text of the sizes real tool output has),
and the token figures are a quarter of the characters (as an estimate would put them), growing
as a session grows until Codex's compaction near the window's end.

Deterministic: the same arguments write the same bytes (random.Random(seed)).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 272_000  # gpt-5-codex's model_context_window as Codex reports it
COMPACT_AT = 0.9  # Codex compacts when the context passes this share of the window
MODEL = "gpt-5-codex"
START = 1_795_000_000.0  # 2026-11-18, the rollout's first record (seconds)
SESSION_ID = "0199b000-0000-7000-8000-000000000019"  # Codex's id of the session


def write_rollout(folder: Path, responses: int = 300, seed: int = 19) -> Path:
    """A rollout of `responses` model responses (about a third of them without a tool call)
    under `folder` (Codex's sessions folder layout); its path."""
    target = folder / "2026" / "11" / "18" / "rollout-2026-11-18T09-00-00-0199b.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w") as out:
        for record in records(responses, seed):
            out.write(json.dumps(record) + "\n")
    return target


def records(responses: int, seed: int = 19) -> Iterator[dict[str, Any]]:
    """The rollout's records, in order."""
    rng = random.Random(seed)
    sources = _source_texts()
    clock = [START]

    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        clock[0] += rng.uniform(0.2, 6.0)
        stamp = _iso(clock[0])
        return {"timestamp": stamp, "type": kind, "payload": payload}

    yield line(
        "session_meta",
        {"id": SESSION_ID, "timestamp": _iso(START),
         "cwd": "/home/me/project", "originator": "codex_cli_rs", "cli_version": "0.58.0"},
    )  # fmt: skip
    context = 6_000  # the system prompt, tools and AGENTS.md Codex sends first
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
             "reasoning_output_tokens": 0, "total_tokens": 0}  # fmt: skip
    compactions = 0
    for n in range(responses):
        if n % 6 == 0:  # a new user turn
            yield line(
                "turn_context",
                {"cwd": "/home/me/project", "model": MODEL, "effort": "medium",
                 "approval_policy": "on-request", "summary": "auto"},
            )  # fmt: skip
            prompt = f"step {n // 6 + 1}: {rng.choice(_PROMPTS)}"
            yield line("response_item", _message("user", "input_text", prompt))
            yield line("event_msg", {"type": "user_message", "message": prompt})
            context += len(prompt) // 4 + 8
        thought = rng.choice(_THOUGHTS)
        yield line(
            "response_item",
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": thought}],
             "encrypted_content": "gAAAA" + "x" * rng.randint(400, 2400)},
        )  # fmt: skip
        yield line("event_msg", {"type": "agent_reasoning", "text": thought})
        tool = n % 3 != 2
        if tool:
            source = sources[n % len(sources)]
            command = ["bash", "-lc", f"sed -n 1,{rng.randint(80, 600)}p {source[0]}"]
            call_id = f"call_{seed}_{n}"
            yield line(
                "response_item",
                {"type": "function_call", "name": "shell",
                 "arguments": json.dumps({"command": command, "workdir": "/home/me/project"}),
                 "call_id": call_id},
            )  # fmt: skip
            said = ""
        else:
            said = f"{rng.choice(_REPLIES)} ({n})"
            yield line("response_item", _message("assistant", "output_text", said))
            yield line("event_msg", {"type": "agent_message", "message": said})
        reasoning = rng.randint(60, 1_500)
        output = reasoning + len(said) // 4 + (40 if tool else 0)
        last = {
            "input_tokens": context,
            "cached_input_tokens": max(0, context - rng.randint(300, 4_000)) // 256 * 256,
            "output_tokens": output,
            "reasoning_output_tokens": reasoning,
            "total_tokens": context + output,
        }
        for key in total:
            total[key] += last[key]
        yield line(
            "event_msg",
            {"type": "token_count",
             "info": {"total_token_usage": dict(total), "last_token_usage": last,
                      "model_context_window": WINDOW},
             "rate_limits": _limits(n, responses, clock[0])},
        )  # fmt: skip
        context += output - reasoning
        if tool:
            text = source[1][: rng.randint(2_000, 24_000)]
            output_text = json.dumps({"output": text, "metadata": {"exit_code": 0}})
            yield line(
                "response_item",
                {"type": "function_call_output", "call_id": call_id, "output": output_text},
            )
            context += len(output_text) // 4
        if context > COMPACT_AT * WINDOW:
            compactions += 1
            summary = f"summary {compactions} of the work so far: " + " ".join(
                rng.choice(_THOUGHTS) for _ in range(12)
            )
            yield line("compacted", {"message": summary})
            context = 6_000 + len(summary) // 4


def _message(role: str, kind: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _limits(n: int, responses: int, now: float) -> dict[str, Any]:
    """Codex's rate limits: the 5-hour and weekly windows, used more as the session goes."""
    return {
        "primary": {"used_percent": round(5 + 60 * n / responses, 1), "window_minutes": 300,
                    "resets_at": int(now + 9_000)},
        "secondary": {"used_percent": round(2 + 20 * n / responses, 1), "window_minutes": 10080,
                      "resets_at": int(now + 3 * 86_400)},
    }  # fmt: skip


def _source_texts() -> list[tuple[str, str]]:
    """(path, text) of this repository's Python sources, in a fixed order: tool output."""
    files = sorted((ROOT / "server" / "tokend").rglob("*.py"))
    return [(str(p.relative_to(ROOT)), p.read_text()) for p in files if p.stat().st_size > 2_000]


def _iso(seconds: float) -> str:
    import datetime

    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


_PROMPTS = (
    "the status line flickers when the daemon restarts; find out why",
    "add a test for the follower's restart mid-reply",
    "why does the import refuse this transcript?",
    "make the cold path print something at once",
    "review the last change and tighten the error messages",
)
_THOUGHTS = (
    "Looking at how the command reads its arguments.",
    "Checking where the socket is created and who may connect.",
    "Reading the tests that cover this path first.",
    "The figure comes from the last token_count; following it back.",
    "Comparing the two code paths for the same option.",
)
_REPLIES = (
    "Done: the change is in and the tests pass.",
    "I found the cause; here is what I changed and why.",
    "The command now says what to do instead of failing.",
)
