package pipeline

// The contract between the session workflow and the activities for the
// in-chat commands answered from the store (/context, /compact, /export),
// the per-turn reasoning effort and the usage a model reports.
const (
	// ActivityDescribeContext says what the next prompt holds
	// (ContextRequest → ContextReport).
	ActivityDescribeContext = "DescribeContext"
	// ActivityCompactTranscript asks one model to summarize the session's
	// transcript and starts a new transcript from the summary
	// (CompactRequest → CompactResult). Model failures are
	// ApplicationErrors of the Err* types, as AgentTurn's are, so the
	// workflow falls back along the chain the same way.
	ActivityCompactTranscript = "CompactTranscript"
	// ActivityExportTranscript sends the session's transcript as a
	// Markdown document: a file where the platform takes files, else
	// chunked replies (ExportRequest → ExportResult).
	ActivityExportTranscript = "ExportTranscript"
)

// ContextRequest asks what the session's next prompt would hold. The
// workflow adds what only it knows: the observed messages waiting for
// the next turn.
type ContextRequest struct {
	Session SessionKey `json:"session"`
	Group   bool       `json:"group,omitempty"`
	// Observed and ObservedTokens are the group messages the session
	// observed without answering, which the next turn will see.
	Observed       int `json:"observed,omitempty"`
	ObservedTokens int `json:"observed_tokens,omitempty"`
}

// ContextReport is what the next prompt holds, in numbers (never text:
// the report is shown in the chat and recorded in history).
type ContextReport struct {
	// PersonaTokens is the operator's system prompt
	// (REPLYFLOW_SYSTEM_PROMPT); SystemTokens adds the context replyflow
	// writes (where and when the conversation happens).
	PersonaTokens int `json:"persona_tokens"`
	SystemTokens  int `json:"system_tokens"`
	// TranscriptStored is how many messages the current transcript
	// holds; TranscriptMessages and TranscriptTokens are those that fit
	// the budget and go into the prompt.
	TranscriptStored   int `json:"transcript_stored"`
	TranscriptMessages int `json:"transcript_messages"`
	TranscriptTokens   int `json:"transcript_tokens"`
	// Budget is the prompt's token budget (REPLYFLOW_CONTEXT_TOKENS).
	Budget int `json:"budget"`
	// Compacted is true when the transcript starts from a /compact
	// summary.
	Compacted bool `json:"compacted,omitempty"`
	// Tools are the names of the tools offered to the model.
	Tools []string `json:"tools,omitempty"`
}

// CompactRequest asks Model to summarize the session's transcript, with
// Focus (what the summary should keep, at most MaxCompactFocusRunes) if
// given. Key names this compaction (the command's message ID): a retried
// attempt starts no second transcript.
type CompactRequest struct {
	Session SessionKey `json:"session"`
	Key     string     `json:"key"`
	Model   string     `json:"model"`
	Focus   string     `json:"focus,omitempty"`
	// Sender asked for it (a platform sender ID, as a turn's messages
	// carry it): the compaction counts against their budget too.
	Sender string `json:"sender,omitempty"`
}

// CompactResult says what a compaction did: Summarized messages became
// one summary of SummaryTokens; zero Summarized means the transcript was
// empty and nothing changed.
type CompactResult struct {
	Summarized    int    `json:"summarized"`
	SummaryTokens int    `json:"summary_tokens,omitempty"`
	Model         string `json:"model,omitempty"`
}

// ExportRequest sends the transcript under ReplyTo (the /export message)
// in ThreadID. IdempotencyKey names the export: a retried attempt sends
// nothing twice (each chunk is keyed IdempotencyKey/<n> in the ledger).
type ExportRequest struct {
	Session        SessionKey `json:"session"`
	IdempotencyKey string     `json:"idempotency_key"`
	ThreadID       string     `json:"thread_id,omitempty"`
	ReplyTo        string     `json:"reply_to,omitempty"`
}

// ExportResult says how the transcript went out.
type ExportResult struct {
	Messages int  `json:"messages"`
	AsFile   bool `json:"as_file,omitempty"`
	Chunks   int  `json:"chunks,omitempty"`
}

// Usage is what one model call cost, as the provider reported it.
type Usage struct {
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// CostUSD is set only where the provider gives the cost (OpenRouter's
	// usage.cost); replyflow keeps no price list.
	CostUSD float64 `json:"cost_usd,omitempty"`
	HasCost bool    `json:"has_cost,omitempty"`
}

// Add sums two usages; the cost is known only when both are.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens,
		CostUSD:      u.CostUSD + v.CostUSD,
		HasCost:      u.HasCost && v.HasCost || u.HasCost && v.zero() || v.HasCost && u.zero(),
	}
}

func (u Usage) zero() bool { return u == Usage{} }
