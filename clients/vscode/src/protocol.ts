// Types mirroring protocol.md, the contract every tokend client follows. Field names are the
// wire's (camelCase). Units: every *Tokens field, contextWindow, maxOutputTokens,
// autocompactThreshold, limit and total are tokens; usedPercentage is a percentage of
// contextWindow (0-100, one decimal); *Usd are US dollars. No `vscode` import here: node tests
// run this module against a real daemon. tests/clients/test_clients_contract.py checks it against
// protocol.md.

export const Methods = {
  sessionCreate: "session/create",
  sessionAppend: "session/append",
  sessionList: "session/list",
  sessionAttach: "session/attach",
  sessionDetach: "session/detach",
  sessionCompact: "session/compact",
  budgetSnapshot: "budget/snapshot",
  contextAssemble: "context/assemble",
  daemonStatus: "daemon/status",
  followStart: "follow/start",
  followList: "follow/list",
  followStop: "follow/stop",
  sessionMessages: "session/messages",
  sessionRewind: "session/rewind",
} as const;

export const Notifications = {
  budgetDidChange: "budget/didChange",
  sessionDidCompact: "session/didCompact",
} as const;

// tokend's own error codes (protocol.md, Errors): -33099…-33000, outside JSON-RPC's and LSP's ranges.
export const ErrorCodes = {
  SessionNotFound: -33001,
  UnknownModel: -33002,
  ContextOverflow: -33003,
  TokenizerUnavailable: -33004,
  MessageTooLarge: -33005,
  VersionConflict: -33006,
  Unauthorized: -33007,
  StoreError: -33010,
  RequestTooLarge: -33011,
  ReplyTooLarge: -33012,
  SpendLimitReached: -33020,
} as const;

export type Category = "system" | "tools" | "memory" | "repoMap" | "chatFiles" | "messages";

export interface BreakdownItem {
  category: Category;
  tokens: number;
  basis: "exact" | "estimate" | "derived";
}

export interface Cost {
  totalUsd: number;
  byModel: Record<string, number>;
}

export interface Totals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export interface Time {
  wallMs: number;
  apiMs: number | null;
  linesAdded: number;
  linesRemoved: number;
}

export interface LastCall {
  messageId: string;
  inputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  contextTokens: number;
  /** What the provider's context editing cleared from that call's input (0 without). */
  clearedInputTokens: number;
  predictedTokens: number | null;
  errorPct: number | null;
}

/** The prompt cache the window's last call left; warm/secondsLeft as of when it was sent. */
export interface PromptCache {
  cachedTokens: number;
  ttlSeconds: number;
  lastCallAt: string;
  expiresAt: string;
  warm: boolean;
  secondsLeft: number;
}

export interface Snapshot {
  sessionId: string;
  model: string;
  contextWindow: number;
  maxOutputTokens: number;
  usedTokens: number;
  usedPercentage: number;
  remainingTokens: number;
  estimated: boolean;
  breakdown: BreakdownItem[];
  autocompactThreshold: number;
  compactions: number;
  /** "provider": the model's provider compacts the context itself; "tokend": session/compact. */
  compactWith: "provider" | "tokend";
  cost: Cost;
  totals: Totals;
  time: Time;
  lastCall: LastCall | null;
  lastEstimateErrorPct: number | null;
  version: number;
  warnings: string[];
  rate: RateHeadroom | null;
  promptCache: PromptCache | null;
}

export interface SessionSummary {
  sessionId: string;
  model: string;
  title: string | null;
  workspaceUri: string | null;
  createdAt: string;
  updatedAt: string;
  usedTokens: number;
  usedPercentage: number;
  contextWindow: number;
  estimated: boolean;
}

export interface SessionListParams {
  workspaceUri?: string;
  /** every workspace's sessions (default: the connection's workspace) */
  all?: boolean;
}

export interface SessionListResult {
  sessions: SessionSummary[];
}

export interface SessionIdParams {
  sessionId: string;
}

export interface SessionCompactParams {
  sessionId: string;
  strategy?: "auto" | "prune" | "summarize" | "full";
  fromMessageId?: string;
  instructions?: string;
  workDoneToken?: number | string;
}

export interface CompactAction {
  kind: "prune" | "summarize" | "full" | "skip";
  parts: number;
  tokensFreed: number;
  detail: string;
  messageId?: string; // the summary message (summarize, full)
}

export interface CompactResult {
  before: number;
  after: number;
  actions: CompactAction[];
  snapshot: Snapshot;
}

export interface BudgetDidChangeParams {
  sessionId: string;
  snapshot: Snapshot;
}

export interface SessionDidCompactParams {
  sessionId: string;
  before: number;
  after: number;
  automatic: boolean;
  actions: CompactAction[];
}

export type Agent = "claude-code" | "codex";

export interface FollowStartParams {
  agent: Agent;
  path?: string;
  workspaceUri?: string;
}

export interface FollowStopParams {
  followerId: string;
}

export interface FollowedTranscript {
  path: string;
  sessionId: string | null;
  workspaceUri: string | null;
  records: number;
  messages: number;
  calls: number;
  compactions: number;
  error: string | null;
  caughtUp: boolean;
}

export interface Follower {
  followerId: string;
  agent: Agent;
  path: string;
  folder: boolean;
  transcripts: FollowedTranscript[];
}

export interface FollowListResult {
  followers: Follower[];
}

export interface InitializationOptions {
  session?: string;
  authToken?: string;
}

export interface SessionMessagesParams {
  sessionId: string;
  includeCompacted?: boolean;
}

export interface MessageInfo {
  messageId: string;
  role: "user" | "assistant" | "tool" | "system";
  kind: "message" | "summary";
  parts: { type: string; text?: string }[];
  createdAt: string;
  tokens: number | null;
  live: boolean;
  compactedAt?: string;
  compactedBy?: string;
  model?: string;
}

export interface SessionMessagesResult {
  messages: MessageInfo[];
}

export interface SessionRewindParams {
  sessionId: string;
  toMessageId: string;
  ifVersion?: number;
  restore?: "conversation" | "code" | "both";
  dryRun?: boolean;
  force?: boolean;
}

export interface RestoredFile {
  path: string;
  action: "write" | "create" | "delete" | "kept" | "unavailable";
  reason?: string;
  movedBackFrom?: string;
}

export interface SessionRewindResult {
  removed: number;
  version: number;
  snapshot: Snapshot;
  code?: { toMessageId: string; dryRun: boolean; files: RestoredFile[]; outside: string[]; restored: number; kept: number };
}

export interface RateHeadroom {
  tokensPerMinute: number;
  tpmLimit: number;
  headroomTokens: number;
  usedPercentage: number;
}
