// The VS Code extension: launches `tokend lsp`, shows the gauge in the status bar, and offers
// Compact now, Show context, Switch session, Follow and Rewind to…. Failures are logged, never thrown.
import { LanguageClient, type LanguageClientOptions, type ServerOptions } from "vscode-languageclient/node";

import { DEFAULT_STAGES, contextBars, stage, statusText, tooltipMarkdown } from "./gauge";
import { INSTALL_HINT, findTokend } from "./locate";
import type { Agent, Snapshot } from "./protocol";
import { TokendSession } from "./session";
import { firstWorkspaceUri, log, setting, vscode, workspaceFolders } from "./vscodeapi";

let client: LanguageClient | undefined;
let session: TokendSession | undefined;
let item: vscode.StatusBarItem | undefined;
const CONTEXT_URI = vscode.Uri.parse("tokend:context.txt");
const contextChanged = new vscode.EventEmitter<vscode.Uri>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  item.command = "tokend.menu";
  context.subscriptions.push(item, log, contextChanged);
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider("tokend", {
      onDidChange: contextChanged.event,
      provideTextDocumentContent: () => (session?.snapshot ? contextBars(session.snapshot) : "No tokend session yet.\n"),
    }),
  );
  const commands: [string, () => Promise<void>][] = [
    ["tokend.menu", menu],
    ["tokend.compact", compact],
    ["tokend.showContext", showContext],
    ["tokend.selectSession", selectSession],
    ["tokend.follow", follow],
    ["tokend.restartDaemon", restart],
  ];
  for (const [name, run] of commands) {
    context.subscriptions.push(vscode.commands.registerCommand(name, () => run().catch(report)));
  }
  await start().catch(report);
}

export async function deactivate(): Promise<void> {
  await client?.stop().catch(() => undefined);
}

async function start(): Promise<void> {
  const command = findTokend(setting("path", ""), workspaceFolders(), process.env.PATH ?? "");
  if (command === undefined) {
    showItem("$(pulse) tokend: not installed", INSTALL_HINT, undefined);
    void vscode.window.showWarningMessage(INSTALL_HINT);
    return;
  }
  const serverOptions: ServerOptions = { command, args: ["lsp"] };
  const clientOptions: LanguageClientOptions = {
    initializationOptions: { session: setting("session", "active") },
    outputChannel: log,
  };
  const lsp = new LanguageClient("tokend", "tokend", serverOptions, clientOptions);
  client = lsp;
  session = new TokendSession(
    {
      sendRequest: <R>(method: string, params?: unknown) => lsp.sendRequest<R>(method, params),
      onNotification: (method, handler) => lsp.onNotification(method, handler),
    },
    firstWorkspaceUri(),
  );
  session.onDidChange(render);
  session.onDidCompact((c) => log.info(`compacted ${c.before} -> ${c.after} tokens${c.automatic ? " (automatic)" : ""}`));
  showItem("$(pulse) tokend", "tokend: waiting for a session in this workspace", undefined);
  await client.start();
}

function render(snapshot: Snapshot): void {
  const stages = {
    warningPercent: setting("warningPercent", DEFAULT_STAGES.warningPercent),
    errorPercent: setting("errorPercent", DEFAULT_STAGES.errorPercent),
  };
  const background = { ok: undefined, warning: "statusBarItem.warningBackground", error: "statusBarItem.errorBackground" }[
    stage(snapshot, stages)
  ];
  const tooltip = new vscode.MarkdownString(tooltipMarkdown(snapshot));
  showItem(statusText(snapshot), tooltip, background);
  contextChanged.fire(CONTEXT_URI);
}

function showItem(text: string, tooltip: string | vscode.MarkdownString, background: string | undefined): void {
  if (!item) {
    return;
  }
  item.text = text;
  item.tooltip = tooltip;
  item.backgroundColor = background ? new vscode.ThemeColor(background) : undefined;
  item.show();
}

async function menu(): Promise<void> {
  const picks: [string, () => Promise<void>][] = [
    ["$(fold) Compact now", compact],
    ["$(graph) Show context", showContext],
    ["$(list-selection) Switch session", selectSession],
    ["$(eye) Follow a Claude Code / Codex session", follow],
    ["$(history) Rewind to…", rewindTo],
  ];
  const chosen = await vscode.window.showQuickPick(picks.map(([label]) => label), { placeHolder: "tokend" });
  await picks.find(([label]) => label === chosen)?.[1]();
}

async function compact(): Promise<void> {
  const current = requireSession();
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "tokend: compacting the session" },
    () => current.compact(),
  );
  const details = result.actions.map((a) => a.detail).join("; ");
  void vscode.window.showInformationMessage(`tokend: ${result.before.toLocaleString()} → ${result.after.toLocaleString()} tokens. ${details}`);
}

async function showContext(): Promise<void> {
  const document = await vscode.workspace.openTextDocument(CONTEXT_URI);
  await vscode.window.showTextDocument(document, { preview: true });
}

async function selectSession(): Promise<void> {
  const current = requireSession(false);
  const sessions = await current.sessions();
  const chosen = await vscode.window.showQuickPick(
    sessions.map((s) => ({
      label: s.title ?? s.sessionId,
      description: `${s.model} · ${Math.round(s.usedPercentage)}%`,
      detail: s.updatedAt,
      id: s.sessionId,
    })),
    { placeHolder: "tokend: the session to show" },
  );
  if (chosen) {
    await current.attach(chosen.id);
  }
}

async function follow(): Promise<void> {
  const current = requireSession(false);
  const agent = await vscode.window.showQuickPick(["claude-code", "codex"], { placeHolder: "Follow which agent?" });
  if (!agent) {
    return;
  }
  const follower = await current.follow({ agent: agent as Agent });
  void vscode.window.showInformationMessage(`tokend: following ${follower.path}`);
}

async function rewindTo(): Promise<void> {
  const current = requireSession();
  const points = await current.rewindPoints();
  const chosen = await vscode.window.showQuickPick(
    points.map((m) => ({
      label: (m.parts.find((p) => p.type === "text")?.text ?? "(no text)").split("\n")[0].slice(0, 80),
      description: m.createdAt,
      id: m.messageId,
    })),
    { placeHolder: "tokend: rewind to which of your messages? (it stays; what followed goes)" },
  );
  if (!chosen) {
    return;
  }
  const how = await vscode.window.showQuickPick(
    [
      { label: "Code and conversation", restore: "both" as const },
      { label: "Conversation only", restore: "conversation" as const },
      { label: "Code only", restore: "code" as const },
    ],
    { placeHolder: "tokend: what to rewind" },
  );
  if (!how) {
    return;
  }
  const preview = await current.rewind(chosen.id, how.restore, true);
  const files = preview.code?.files ?? [];
  const kept = files.filter((f) => f.action === "kept").map((f) => `${f.path} (${f.reason ?? "kept"})`);
  const summary = `${preview.removed} messages, ${files.length - kept.length} files` + (kept.length ? `; kept: ${kept.join(", ")}` : "");
  const go = await vscode.window.showWarningMessage(`tokend: rewind ${summary}?`, { modal: true }, "Rewind");
  if (go !== "Rewind") {
    return;
  }
  const done = await current.rewind(chosen.id, how.restore);
  void vscode.window.showInformationMessage(`tokend: rewound ${done.removed} messages and ${done.code?.restored ?? 0} files`);
}

async function restart(): Promise<void> {
  await client?.stop().catch(() => undefined);
  client = undefined;
  session = undefined;
  await start();
}

function requireSession(withSnapshot = true): TokendSession {
  if (!session || (withSnapshot && !session.snapshot)) {
    throw new Error(session ? "no tokend session in this workspace yet" : INSTALL_HINT);
  }
  return session;
}

function report(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  log.error(message);
  void vscode.window.showErrorMessage(`tokend: ${message}`);
}
