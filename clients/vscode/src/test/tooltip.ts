// What the status-bar item's tooltip must show, checked on the text a user reads: the hover's
// innerText in real VS Code (e2e/drive.mjs, `make test-editors`), and the Markdown of gauge.ts
// rendered the way VS Code renders it (daemon.test.ts, in `make test`). One check for both, so a
// change of the tooltip that the real-editor test would trip on fails `make test` first.
// The expected lines are written here from the daemon's snapshot, not by gauge.ts.
import type { Snapshot } from "../protocol";

const number = (n: number): string => n.toLocaleString("en-US");
const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The lines Markdown shows: a paragraph's lines run together (joined by a space), a table's rows
 * stay rows (their cells separated by tabs, as a browser's innerText gives them). */
export function renderedLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of markdown.split(/\n\s*\n/)) {
    const rows = block.split("\n").filter((line) => line.trim() !== "");
    if (rows.length > 0 && rows.every((row) => row.trim().startsWith("|"))) {
      for (const row of rows.filter((r) => !/^\|[-:| ]+\|$/.test(r.trim()))) {
        lines.push(row.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim()).join("\t"));
      }
    } else if (rows.length > 0) {
      lines.push(rows.map((row) => row.trim()).join(" "));
    }
  }
  return lines;
}

/** What is wrong with `shown` (the tooltip as the user reads it) for snapshot `s`; [] if nothing. */
export function tooltipProblems(shown: string, s: Snapshot): string[] {
  const lines = shown.split("\n").map((line) => line.trim());
  const problems: string[] = [];
  const want = (what: string, ok: boolean) => {
    if (!ok) {
      problems.push(`${what}:\n${shown}`);
    }
  };
  want("no Messages row", lines.some((line) => line.startsWith("Messages")));
  want(`no ${number(s.usedTokens)} used tokens`, shown.includes(number(s.usedTokens)));
  const threshold = `Compacts at ${number(s.autocompactThreshold)} · ${plural(s.compactions, "compaction")} so far`;
  want(`the threshold is not a line of its own ("${threshold}")`, lines.includes(threshold));
  const cost = `Cost $${s.cost.totalUsd.toFixed(2)} · ${plural(s.totals.calls, "call")}`;
  want(`the cost is not a line of its own ("${cost}")`, lines.includes(cost));
  const provider = lines.some((line) => line.startsWith("The provider can compact"));
  want(`the provider line ${provider ? "shown" : "missing"} for compactWith ${s.compactWith}`, provider === (s.compactWith === "provider"));
  return problems;
}
