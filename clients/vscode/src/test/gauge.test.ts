// The gauge's text and stages from snapshots written here by hand (protocol.md's shape).
import assert from "node:assert/strict";
import { test } from "node:test";

import { contextRows, shortTokens, stage, statusText, tooltipMarkdown } from "../gauge";
import type { Snapshot } from "../protocol";

function snapshot(used: number, estimated = false, compactWith: Snapshot["compactWith"] = "tokend"): Snapshot {
  return {
    sessionId: "01JD3M6Q1V8T9W2X4Y5Z6A7B8C",
    model: "claude-opus-4-6",
    contextWindow: 200_000,
    maxOutputTokens: 128_000,
    usedTokens: used,
    usedPercentage: Math.round((used / 2_000) * 10) / 10,
    remainingTokens: 200_000 - used,
    estimated,
    breakdown: [
      { category: "system", tokens: 3_000, basis: "exact" },
      { category: "messages", tokens: used - 3_000, basis: "derived" },
    ],
    autocompactThreshold: 168_000,
    compactions: 0,
    compactWith,
    cost: { totalUsd: 1.234, byModel: { "claude-opus-4-6": 1.234 } },
    totals: { calls: 3, inputTokens: 9, outputTokens: 120, reasoningTokens: 0, cacheReadTokens: 80_000, cacheWriteTokens: 6_000 },
    time: { wallMs: 0, apiMs: null, linesAdded: 0, linesRemoved: 0 },
    rate: null,
    promptCache: null,
    lastCall: null,
    lastEstimateErrorPct: null,
    version: 7,
    warnings: [],
  };
}

test("the status-bar text is absolute and percent, with ~ while estimated", () => {
  assert.equal(statusText(snapshot(86_000)), "$(pulse) 86k/200k · 43%");
  assert.equal(statusText(snapshot(86_000, true)), "$(pulse) ~86k/200k · 43%");
  assert.equal(shortTokens(1_000_000), "1M");
  assert.equal(shortTokens(1_048_576), "1M");
  assert.equal(shortTokens(950), "950");
});

test("two stages: warning from 70%, error from 90%, both configurable", () => {
  assert.equal(stage(snapshot(138_000)), "ok"); // 69%
  assert.equal(stage(snapshot(140_000)), "warning"); // 70%
  assert.equal(stage(snapshot(180_000)), "error"); // 90%
  assert.equal(stage(snapshot(86_000), { warningPercent: 40, errorPercent: 80 }), "warning");
});

test("the context rows add up to the window", () => {
  const rows = contextRows(snapshot(86_000));
  assert.equal(
    rows.reduce((sum, row) => sum + row.tokens, 0),
    200_000,
  );
  assert.deepEqual(
    rows.map((r) => r.category),
    ["system", "messages", "free", "autocompact buffer", "output reserve"],
  );
});

test("the tooltip shows the breakdown, the threshold and the cost", () => {
  const text = tooltipMarkdown(snapshot(86_000));
  for (const shown of ["| System prompt | 3,000 |", "| Messages | 83,000 |", "| Free |", "Compacts at 168,000", "Cost $1.23"]) {
    assert.ok(text.includes(shown), `${shown} missing from\n${text}`);
  }
});

test("the threshold and the cost are paragraphs of their own (Markdown joins adjacent lines)", () => {
  const paragraphs = tooltipMarkdown(snapshot(86_000)).split(/\n\s*\n/);
  assert.ok(paragraphs.some((p) => p.trim().startsWith("Compacts at") && !p.includes("Cost")), paragraphs.join("\n--\n"));
  assert.ok(paragraphs.some((p) => p.trim().startsWith("Cost $")), paragraphs.join("\n--\n"));
});

test("the tooltip says when the provider compacts the context itself, and only then", () => {
  const line = "The provider can compact this model's context itself";
  assert.ok(tooltipMarkdown(snapshot(86_000, false, "provider")).includes(line));
  assert.ok(!tooltipMarkdown(snapshot(86_000)).includes(line));
});
