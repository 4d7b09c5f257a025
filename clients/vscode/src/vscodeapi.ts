// The one seam to the `vscode` API: everything else is plain TypeScript tested with node.
import * as vscode from "vscode";

export { vscode };

export function setting<T>(key: string, fallback: T): T {
  return vscode.workspace.getConfiguration("tokend").get<T>(key, fallback);
}

export function workspaceFolders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

export function firstWorkspaceUri(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.toString();
}

export const log = vscode.window.createOutputChannel("tokend", { log: true });
