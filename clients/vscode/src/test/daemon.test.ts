// protocol.ts and session.ts against a real daemon: two `tokend lsp` processes over
// vscode-jsonrpc, an agent that writes the session and an editor that shows it.
// tests/clients/test_clients_vscode.py runs this with TOKEND_TEST_COMMAND set (the python that runs tokend).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { type MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from "vscode-jsonrpc/node";

import { stage, statusText, tooltipMarkdown } from "../gauge";
import { Methods, type SessionDidCompactParams, type Snapshot } from "../protocol";
import { TokendSession } from "../session";
import { renderedLines, tooltipProblems } from "./tooltip";

const WAIT_MS = 60_000;

function tokendCommand(): string[] {
  const raw = process.env.TOKEND_TEST_COMMAND;
  assert.ok(raw, "TOKEND_TEST_COMMAND is not set: run this through tests/clients/test_clients_vscode.py");
  return JSON.parse(raw) as string[];
}

const processes: ChildProcess[] = [];

async function connect(name: string, workspaceUri: string, session?: string): Promise<MessageConnection> {
  const [command, ...args] = tokendCommand();
  const child = spawn(command, [...args, "lsp"], { stdio: ["pipe", "pipe", "inherit"] });
  processes.push(child);
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  connection.listen();
  await connection.sendRequest("initialize", {
    processId: process.pid,
    capabilities: {},
    clientInfo: { name },
    workspaceFolders: [{ uri: workspaceUri, name: "app" }],
    initializationOptions: session ? { session } : {},
  });
  await connection.sendNotification("initialized", {});
  return connection;
}

async function until<T>(what: string, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = probe();
    if (value !== undefined) {
      return value;
    }
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function expectedText(s: Snapshot): string {
  const k = (n: number) => (n >= 1000 ? `${Math.round(n / 1000)}k` : String(n));
  return `$(pulse) ${s.estimated ? "~" : ""}${k(s.usedTokens)}/${k(s.contextWindow)} · ${Math.round(s.usedPercentage)}%`;
}

test("the editor's gauge follows what another client does, and compacts", async () => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tokend-vscode-"));
  const workspaceUri = pathToFileURL(folder).toString();
  try {
    const agent = await connect("agent", workspaceUri);
    const created = await agent.sendRequest<{ sessionId: string }>(Methods.sessionCreate, {
      model: "gpt-4o",
      workspaceUri,
      contextWindow: 400_000,
    });
    const sessionId = created.sessionId;
    const append = (role: string, part: object) =>
      agent.sendRequest(Methods.sessionAppend, { sessionId, message: { role, parts: [part] } });
    await append("user", { type: "text", text: "make the build pass" });

    const connection = await connect("Visual Studio Code", workspaceUri, "active");
    const editor = new TokendSession(connection, workspaceUri);
    const first = await until("the first snapshot", () => editor.snapshot);
    const reference = await agent.sendRequest<Snapshot>(Methods.budgetSnapshot, { sessionId });
    assert.equal(first.sessionId, sessionId);
    assert.equal(statusText(first), expectedText(reference));

    for (let i = 0; i < 8; i++) {
      await append("user", { type: "text", text: `step ${i}` });
      await append("assistant", { type: "toolCall", callId: `c${i}`, name: "bash", input: { cmd: "make" } });
      const output = `compiling unit ${i}: warning: deprecated flag in module ${i}\n`.repeat(800);
      await append("tool", { type: "toolResult", callId: `c${i}`, name: "bash", output });
    }
    const grown = await agent.sendRequest<Snapshot>(Methods.budgetSnapshot, { sessionId });
    const shown = await until("the grown gauge", () => (editor.snapshot?.version === grown.version ? editor.snapshot : undefined));
    assert.equal(shown.usedTokens, grown.usedTokens);
    assert.equal(statusText(shown), expectedText(grown));
    assert.equal(stage(shown, { warningPercent: 10, errorPercent: 50 }), "warning");
    // the tooltip, rendered as VS Code renders Markdown, passes the real-editor test's own check
    assert.deepEqual(tooltipProblems(renderedLines(tooltipMarkdown(shown)).join("\n"), grown), []);

    const told: SessionDidCompactParams[] = [];
    agent.onNotification("session/didCompact", (params: SessionDidCompactParams) => told.push(params));
    const result = await editor.compact();
    assert.ok(result.after < result.before, "nothing was compacted");
    assert.equal(result.actions[0]?.kind, "prune");
    const after = await agent.sendRequest<Snapshot>(Methods.budgetSnapshot, { sessionId });
    assert.equal(after.compactions, 1);
    assert.equal(editor.snapshot?.usedTokens, after.usedTokens);
    const notice = await until("session/didCompact", () => told[0]);
    assert.equal(notice.before, result.before);
    assert.equal(notice.automatic, false);

    // Rewind to…: the user's messages, newest first; a dry run changes nothing, then it rewinds.
    const points = await editor.rewindPoints();
    assert.equal(points[0]?.parts[0]?.text, "step 7");
    const before = editor.snapshot!.version;
    const dry = await editor.rewind(points[0]!.messageId, "conversation", true);
    assert.equal(dry.removed, 2);
    assert.equal(dry.version, before);
    const rewound = await editor.rewind(points[0]!.messageId, "conversation");
    assert.equal(rewound.removed, 2);
    assert.equal(rewound.version, before + 1);

    const sessions = await editor.sessions();
    assert.deepEqual(
      sessions.map((s) => s.sessionId),
      [sessionId],
    );
  } finally {
    processes.forEach((child) => child.kill());
    fs.rmSync(folder, { recursive: true, force: true });
  }
});
