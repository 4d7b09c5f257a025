// The gauge as text: status-bar item, stage, Markdown tooltip, context bars. Pure: no `vscode`.
import type { Snapshot } from "./protocol";

export type Stage = "ok" | "warning" | "error";

export interface Stages {
  warningPercent: number; // the warning background from this percentage
  errorPercent: number; // the error background from this percentage
}

export const DEFAULT_STAGES: Stages = { warningPercent: 70, errorPercent: 90 };

/** 86012 -> "86k", 1000000 -> "1M", 950 -> "950". */
export function shortTokens(tokens: number): string {
  if (tokens >= 1_000_000) {
    return `${(tokens / 1_000_000).toFixed(1).replace(/\.0$/, "")}M`;
  }
  if (tokens >= 1_000) {
    return `${Math.round(tokens / 1_000)}k`;
  }
  return String(tokens);
}

/** `$(pulse) 86k/200k · 43%`; `~` before the figure while it is estimated. */
export function statusText(s: Snapshot): string {
  const mark = s.estimated ? "~" : "";
  const pct = Math.round(s.usedPercentage);
  return `$(pulse) ${mark}${shortTokens(s.usedTokens)}/${shortTokens(s.contextWindow)} · ${pct}%`;
}

export function stage(s: Snapshot, stages: Stages = DEFAULT_STAGES): Stage {
  if (s.usedPercentage >= stages.errorPercent) {
    return "error";
  }
  return s.usedPercentage >= stages.warningPercent ? "warning" : "ok";
}

export interface ContextRow {
  category: string;
  tokens: number;
}

/** The breakdown, then free space, the autocompact buffer and the output reserve: rows that
 * add up to the context window (as `tokend context` shows them). */
export function contextRows(s: Snapshot): ContextRow[] {
  const rows: ContextRow[] = s.breakdown.map((b) => ({ category: b.category, tokens: b.tokens }));
  const reserve = Math.min(s.maxOutputTokens, Math.max(0, s.contextWindow - s.autocompactThreshold));
  const buffer = Math.max(0, s.contextWindow - s.autocompactThreshold - reserve);
  const free = Math.max(0, s.contextWindow - s.usedTokens - reserve - buffer);
  rows.push({ category: "free", tokens: free });
  rows.push({ category: "autocompact buffer", tokens: buffer });
  rows.push({ category: "output reserve", tokens: reserve });
  return rows;
}

const LABELS: Record<string, string> = {
  system: "System prompt",
  tools: "Tools",
  memory: "Memory",
  repoMap: "Repo map",
  chatFiles: "Chat files",
  messages: "Messages",
  free: "Free",
  "autocompact buffer": "Autocompact buffer",
  "output reserve": "Output reserve",
};

const number = (n: number): string => n.toLocaleString("en-US");

/** The Markdown tooltip: a table of the breakdown, the threshold, the cost. */
export function tooltipMarkdown(s: Snapshot): string {
  const lines = [
    `**tokend** · ${s.model}${s.estimated ? " · estimated (no provider usage yet)" : ""}`,
    "",
    `${number(s.usedTokens)} / ${number(s.contextWindow)} tokens (${s.usedPercentage.toFixed(1)}%)`,
    "",
    "| | tokens | % |",
    "|---|---:|---:|",
  ];
  for (const row of contextRows(s)) {
    const pct = (100 * row.tokens) / Math.max(1, s.contextWindow);
    lines.push(`| ${LABELS[row.category] ?? row.category} | ${number(row.tokens)} | ${pct.toFixed(1)}% |`);
  }
  lines.push("");
  // paragraphs of their own: Markdown joins lines that no blank line separates
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  lines.push(`Compacts at ${number(s.autocompactThreshold)} · ${plural(s.compactions, "compaction")} so far`);
  lines.push("");
  if (s.compactWith === "provider") {
    lines.push("The provider can compact this model's context itself");
    lines.push("");
  }
  lines.push(`Cost $${s.cost.totalUsd.toFixed(2)} · ${plural(s.totals.calls, "call")}`);
  for (const warning of s.warnings) {
    lines.push("", `⚠ ${warning}`);
  }
  return lines.join("\n");
}

/** The breakdown as text bars, for the Show Context document. */
export function contextBars(s: Snapshot, width = 40): string {
  const lines = [`${s.model}  ${statusText(s).replace("$(pulse) ", "")}`, ""];
  for (const row of contextRows(s)) {
    const share = row.tokens / Math.max(1, s.contextWindow);
    const cells = Math.round(share * width);
    const label = (LABELS[row.category] ?? row.category).padEnd(19);
    const bar = "█".repeat(cells) + "·".repeat(width - cells);
    lines.push(`${label} ${bar} ${number(row.tokens).padStart(9)} ${(100 * share).toFixed(1).padStart(5)}%`);
  }
  return lines.join("\n") + "\n";
}
