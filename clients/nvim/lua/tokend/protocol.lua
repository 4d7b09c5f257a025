---@meta
-- LuaCATS types mirroring protocol.md (the contract). Field names are the wire's (camelCase);
-- every *Tokens field, contextWindow, maxOutputTokens, autocompactThreshold, limit and total
-- are tokens; usedPercentage is a percentage of contextWindow; *Usd are US dollars.
-- tests/clients/test_clients_contract.py checks these against protocol.md.

---@alias tokend.Method
---| "session/create"
---| "session/append"
---| "session/list"
---| "session/attach"
---| "session/detach"
---| "session/compact"
---| "budget/snapshot"
---| "context/assemble"
---| "daemon/status"
---| "follow/start"
---| "follow/list"
---| "follow/stop"

---@alias tokend.Notification
---| "budget/didChange"
---| "session/didCompact"

-- tokend's own error codes (protocol.md, Errors): -33099…-33000, outside JSON-RPC's and LSP's ranges.
---@alias tokend.ErrorCode
---| -33001 # SessionNotFound
---| -33002 # UnknownModel
---| -33003 # ContextOverflow
---| -33004 # TokenizerUnavailable
---| -33005 # MessageTooLarge
---| -33006 # VersionConflict
---| -33007 # Unauthorized
---| -33010 # StoreError
---| -33011 # RequestTooLarge
---| -33012 # ReplyTooLarge
---| -33020 # SpendLimitReached

---@class tokend.BreakdownItem
---@field category "system"|"tools"|"memory"|"repoMap"|"chatFiles"|"messages"
---@field tokens integer
---@field basis "exact"|"estimate"|"derived"

---@class tokend.Cost
---@field totalUsd number
---@field byModel table<string, number>

---@class tokend.Totals
---@field calls integer
---@field inputTokens integer
---@field outputTokens integer
---@field reasoningTokens integer
---@field cacheReadTokens integer
---@field cacheWriteTokens integer

---@class tokend.Time
---@field wallMs integer
---@field apiMs integer|nil
---@field linesAdded integer
---@field linesRemoved integer

---@class tokend.LastCall
---@field messageId string
---@field inputTokens integer
---@field outputTokens integer
---@field reasoningTokens integer
---@field cacheReadTokens integer
---@field cacheWriteTokens integer
---@field contextTokens integer
---@field clearedInputTokens integer what the provider's context editing cleared from that input
---@field predictedTokens integer|nil
---@field errorPct number|nil

---@class tokend.PromptCache the prompt cache the window's last call left
---@field cachedTokens integer
---@field ttlSeconds integer 300 or 3600
---@field lastCallAt string ISO 8601
---@field expiresAt string ISO 8601
---@field warm boolean as of when the snapshot was sent
---@field secondsLeft integer as of when the snapshot was sent

---@class tokend.Snapshot
---@field sessionId string
---@field model string
---@field contextWindow integer
---@field maxOutputTokens integer
---@field usedTokens integer
---@field usedPercentage number
---@field remainingTokens integer
---@field estimated boolean
---@field breakdown tokend.BreakdownItem[]
---@field autocompactThreshold integer
---@field compactions integer
---@field compactWith "provider"|"tokend" who should compact: the model's provider itself, or tokend
---@field cost tokend.Cost
---@field totals tokend.Totals
---@field time tokend.Time
---@field lastCall tokend.LastCall|nil
---@field lastEstimateErrorPct number|nil
---@field version integer
---@field warnings string[]
---@field rate table|nil {tokensPerMinute, tpmLimit, headroomTokens, usedPercentage} when [rate] tpm_limit is set
---@field promptCache tokend.PromptCache|nil

---@class tokend.SessionSummary
---@field sessionId string
---@field model string
---@field title string|nil
---@field workspaceUri string|nil
---@field createdAt string
---@field updatedAt string
---@field usedTokens integer
---@field usedPercentage number
---@field contextWindow integer
---@field estimated boolean

---@class tokend.SessionListParams
---@field workspaceUri string|nil
---@field all boolean|nil

---@class tokend.SessionListResult
---@field sessions tokend.SessionSummary[]

---@class tokend.SessionIdParams
---@field sessionId string

---@class tokend.SessionCompactParams
---@field sessionId string
---@field strategy "auto"|"prune"|"summarize"|"full"|nil
---@field fromMessageId string|nil
---@field instructions string|nil
---@field workDoneToken integer|string|nil

---@class tokend.CompactAction
---@field kind "prune"|"summarize"|"full"|"skip"
---@field parts integer
---@field tokensFreed integer
---@field detail string
---@field messageId string|nil the summary message (summarize, full)

---@class tokend.CompactResult
---@field before integer
---@field after integer
---@field actions tokend.CompactAction[]
---@field snapshot tokend.Snapshot

---@class tokend.BudgetDidChangeParams
---@field sessionId string
---@field snapshot tokend.Snapshot

---@class tokend.SessionDidCompactParams
---@field sessionId string
---@field before integer
---@field after integer
---@field automatic boolean
---@field actions tokend.CompactAction[]

---@class tokend.FollowStartParams
---@field agent "claude-code"|"codex"
---@field path string|nil
---@field workspaceUri string|nil

---@class tokend.FollowStopParams
---@field followerId string

---@class tokend.FollowedTranscript
---@field path string
---@field sessionId string|nil
---@field workspaceUri string|nil
---@field records integer
---@field messages integer
---@field calls integer
---@field compactions integer
---@field error string|nil
---@field caughtUp boolean

---@class tokend.Follower
---@field followerId string
---@field agent "claude-code"|"codex"
---@field path string
---@field folder boolean
---@field transcripts tokend.FollowedTranscript[]

---@class tokend.FollowListResult
---@field followers tokend.Follower[]

return {}

---@class tokend.SessionMessagesParams
---@field sessionId string
---@field includeCompacted boolean|nil

---@class tokend.MessageInfo
---@field messageId string
---@field role "user"|"assistant"|"tool"|"system"
---@field kind "message"|"summary"
---@field parts table[]
---@field createdAt string
---@field tokens integer|nil
---@field live boolean
---@field compactedAt string|nil
---@field compactedBy string|nil
---@field model string|nil

---@class tokend.SessionMessagesResult
---@field messages tokend.MessageInfo[]

---@class tokend.SessionRewindParams
---@field sessionId string
---@field toMessageId string
---@field ifVersion integer|nil
---@field restore "conversation"|"code"|"both"|nil
---@field dryRun boolean|nil
---@field force boolean|nil

---@class tokend.SessionRewindResult
---@field removed integer
---@field version integer
---@field snapshot tokend.Snapshot
---@field code table|nil the checkpoint/restore result when files were restored

