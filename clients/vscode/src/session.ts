// The followed session over any JSON-RPC connection (vscode-languageclient's LanguageClient in
// the editor, vscode-jsonrpc's MessageConnection in node tests): the last snapshot the daemon
// pushed, and the requests the UI makes. No `vscode` import.
import {
  Methods,
  Notifications,
  type BudgetDidChangeParams,
  type CompactResult,
  type Follower,
  type FollowStartParams,
  type MessageInfo,
  type SessionDidCompactParams,
  type SessionMessagesParams,
  type SessionMessagesResult,
  type SessionRewindParams,
  type SessionRewindResult,
  type SessionSummary,
  type SessionListResult,
  type Snapshot,
} from "./protocol";

export interface Rpc {
  sendRequest<R>(method: string, params?: unknown): Promise<R>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- params are checked by their type below
  onNotification(method: string, handler: (params: any) => void): unknown;
}

type Listener<T> = (value: T) => void;

export class TokendSession {
  snapshot: Snapshot | undefined;
  private readonly changed: Listener<Snapshot>[] = [];
  private readonly compacted: Listener<SessionDidCompactParams>[] = [];

  constructor(
    private readonly rpc: Rpc,
    private readonly workspaceUri?: string,
  ) {
    rpc.onNotification(Notifications.budgetDidChange, (params: BudgetDidChangeParams) => {
      if (this.snapshot === undefined || this.snapshot.sessionId === params.sessionId) {
        this.set(params.snapshot);
      }
    });
    rpc.onNotification(Notifications.sessionDidCompact, (params: SessionDidCompactParams) => {
      this.compacted.forEach((fn) => fn(params));
    });
  }

  onDidChange(listener: Listener<Snapshot>): void {
    this.changed.push(listener);
  }

  onDidCompact(listener: Listener<SessionDidCompactParams>): void {
    this.compacted.push(listener);
  }

  set(snapshot: Snapshot): void {
    this.snapshot = snapshot;
    this.changed.forEach((fn) => fn(snapshot));
  }

  async compact(workDoneToken?: string): Promise<CompactResult> {
    const sessionId = this.requireSession();
    const params = { sessionId, strategy: "auto" as const, ...(workDoneToken ? { workDoneToken } : {}) };
    const result = await this.rpc.sendRequest<CompactResult>(Methods.sessionCompact, params);
    this.set(result.snapshot);
    return result;
  }

  async sessions(): Promise<SessionSummary[]> {
    const params = this.workspaceUri ? { workspaceUri: this.workspaceUri } : {};
    return (await this.rpc.sendRequest<SessionListResult>(Methods.sessionList, params)).sessions;
  }

  /** Follow `sessionId` instead of the current session. */
  async attach(sessionId: string): Promise<Snapshot> {
    const previous = this.snapshot?.sessionId;
    const snapshot = await this.rpc.sendRequest<Snapshot>(Methods.sessionAttach, { sessionId });
    this.set(snapshot);
    if (previous && previous !== sessionId) {
      await this.rpc.sendRequest<null>(Methods.sessionDetach, { sessionId: previous });
    }
    return snapshot;
  }

  /** The daemon follows an agent's transcript (no path: every session in its folder). */
  async follow(params: FollowStartParams): Promise<Follower> {
    return this.rpc.sendRequest<Follower>(Methods.followStart, params);
  }

  /** The user's messages of the live context, newest first: the points a rewind can go back to. */
  async rewindPoints(): Promise<MessageInfo[]> {
    const sessionId = this.requireSession();
    const params: SessionMessagesParams = { sessionId };
    const { messages } = await this.rpc.sendRequest<SessionMessagesResult>(Methods.sessionMessages, params);
    return messages.filter((m) => m.role === "user" && m.kind === "message").reverse();
  }

  /** Rewind the conversation, the files, or both to `toMessageId` (a dry run changes nothing). */
  async rewind(toMessageId: string, restore: "conversation" | "code" | "both", dryRun = false): Promise<SessionRewindResult> {
    const sessionId = this.requireSession();
    const params: SessionRewindParams = { sessionId, toMessageId, restore, dryRun };
    const result = await this.rpc.sendRequest<SessionRewindResult>(Methods.sessionRewind, params);
    this.set(result.snapshot);
    return result;
  }

  private requireSession(): string {
    if (this.snapshot === undefined) {
      throw new Error("no tokend session in this workspace yet");
    }
    return this.snapshot.sessionId;
  }
}
