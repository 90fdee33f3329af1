package pipeline

import "time"

// Activity names: the contract between the session workflow, which calls
// activities by name so that it never imports their code, and the worker,
// which registers them under these names.
const (
	ActivityLoadSettings = "LoadSettings"
	ActivityAgentTurn    = "AgentTurn"
	ActivityDeliver      = "Deliver"
	ActivitySetReaction  = "SetReaction"
	// ActivityClaim spends a claim code for its sender.
	ActivityClaim = "Claim"
	// ActivityGate asks the gate model whether a batch needs a reply.
	ActivityGate = "GateCheck"
	// ActivityEdit edits a message the bot sent (a decided proposal).
	ActivityEdit = "EditMessage"
	// ActivityRunTool runs one tool call.
	ActivityRunTool = "RunTool"
	// ActivitySaveSession stores a session's settings in its session
	// entry, so they outlive the workflow run.
	ActivitySaveSession = "SaveSessionSettings"
)

// SessionSettings are the settings a user changes in chat and the store
// keeps across workflow runs.
type SessionSettings struct {
	ModelOverride string      `json:"model_override,omitempty"`
	Activation    string      `json:"activation,omitempty"`
	Queue         *QueuePatch `json:"queue,omitempty"`
	// Think, Verbose, Usage and Muted are /think, /verbose, /usage and
	// /send off.
	Think   ThinkLevel `json:"think,omitempty"`
	Verbose bool       `json:"verbose,omitempty"`
	Usage   UsageMode  `json:"usage,omitempty"`
	Muted   bool       `json:"muted,omitempty"`
}

// Settings are the knobs a session run works with. The workflow loads them
// once per run through an activity, so they are recorded in history (replay
// sees the same values) and a changed configuration takes effect at the next
// run.
type Settings struct {
	// Models is the fallback chain, primary first (provider/model).
	Models               []string `json:"models"`
	ReactionClearDelay   Duration `json:"reaction_clear_delay"`
	ErrorClearDelay      Duration `json:"error_clear_delay"`
	IdleTTL              Duration `json:"idle_ttl"`
	ChunkLimit           int      `json:"chunk_limit"`
	TurnTimeout          Duration `json:"turn_timeout"`
	TurnHeartbeatTimeout Duration `json:"turn_heartbeat_timeout"`
	TurnAttempts         int      `json:"turn_attempts"`
	DeliveryTimeout      Duration `json:"delivery_timeout"`
	// DeliveryDeadline is how long a chunk may keep failing before the
	// turn parks and waits for an operator's retry.
	DeliveryDeadline Duration `json:"delivery_deadline"`
	MaxHistoryEvents int      `json:"max_history_events"`
	// MaxSteps bounds the model steps (tool rounds) of one turn.
	MaxSteps int `json:"max_steps"`
	// Owners may decide proposals ("provider:id", or "*" for anyone);
	// the requester may too when RequesterMayDecide.
	Owners             []string `json:"owners,omitempty"`
	RequesterMayDecide bool     `json:"requester_may_decide"`
	// ProposalTTL is how long a proposal waits before it expires.
	ProposalTTL Duration `json:"proposal_ttl"`
	// AllowFrom lists who may talk to the agent ("provider:id" or "*").
	AllowFrom []string `json:"allow_from,omitempty"`
	// ModelAllow lists the models besides the chain that a sender who is
	// not an owner may pick with /model (REPLYFLOW_MODEL_ALLOW).
	ModelAllow []string `json:"model_allow,omitempty"`
	// MemberSettings are the chat settings a member may raise as an
	// owner may (REPLYFLOW_MEMBER_SETTINGS; pipeline.MemberThink and the
	// others): Directives.OwnersOnly.
	MemberSettings []string `json:"member_settings,omitempty"`
	// Activation is the channel's engagement mode (pipeline.Activation*);
	// Aliases are the names the agent answers to in groups.
	Activation string   `json:"activation,omitempty"`
	Aliases    []string `json:"aliases,omitempty"`
	// ObservedMaxAge drops observed messages older than this from the
	// next turn's context.
	ObservedMaxAge Duration `json:"observed_max_age,omitempty"`
	// GateModel answers for gated chats within GateTimeout; none means
	// gated chats only answer triggers.
	GateModel   string   `json:"gate_model,omitempty"`
	GateTimeout Duration `json:"gate_timeout,omitempty"`
	// Queue is the channel's default queue mode, debounce window, cap and
	// drop policy; a session's /queue directive overrides it.
	Queue QueueSettings `json:"queue"`
	// DebounceMaxWait bounds a debounce window (and a gated chat's batch
	// waiting for the gate) from its first message: steady chatter that
	// re-arms the window still gets a batch at least this often. Zero
	// takes the workflow's default; a window longer than it is kept whole.
	DebounceMaxWait Duration `json:"debounce_max_wait,omitempty"`
	// ResetWords are whole messages that start a new transcript as /new
	// does (REPLYFLOW_RESET_WORDS); ParseOptions reads them.
	ResetWords []string `json:"reset_words,omitempty"`
	// ReplyPrefix is the template put in front of every reply
	// (REPLYFLOW_REPLY_PREFIX, RenderReplyPrefix).
	ReplyPrefix string `json:"reply_prefix,omitempty"`
	// Saved are the session's own settings from its session entry.
	Saved SessionSettings `json:"saved"`
}

// TurnMessage is one user message as the model sees it.
type TurnMessage struct {
	MessageID  string    `json:"message_id"`
	SenderID   string    `json:"sender_id"`
	SenderName string    `json:"sender_name,omitempty"`
	Text       string    `json:"text"`
	At         time.Time `json:"at"`
}

// TurnRequest asks the agent for one model step of a turn.
type TurnRequest struct {
	Session  SessionKey `json:"session"`
	TurnID   string     `json:"turn_id"`
	ThreadID string     `json:"thread_id,omitempty"`
	Step     int        `json:"step"`
	// Model is the provider/model to ask in this attempt.
	Model string `json:"model"`
	// NextModels are the models this step's round asks after Model, in
	// order: an attempt may decline for one of them that is able to
	// (pipeline.ErrImagesUnsupported).
	NextModels []string `json:"next_models,omitempty"`
	// Text is the user turn as the rules rendered it: the batch joined,
	// the collect and overflow notices, messages steered in.
	Text     string        `json:"text"`
	Messages []TurnMessage `json:"messages"`
	Group    bool          `json:"group,omitempty"`
	// NewTranscript starts the session on a fresh transcript (after /new,
	// or a context overflow) before this step.
	NewTranscript bool `json:"new_transcript,omitempty"`
	// Rounds are the tool calls of the earlier steps of this turn, with
	// their results.
	Rounds []ToolRound `json:"rounds,omitempty"`
	// NoTools asks for a text answer: the turn is at its last step.
	NoTools bool `json:"no_tools,omitempty"`
	// ThinkingOn are the user messages to mark "thinking" once the step
	// has run for the reaction coalescing window; a faster step never
	// shows it, so a quick turn does not flicker.
	ThinkingOn []string `json:"thinking_on,omitempty"`
	// Think is the reasoning effort to ask for (/think); "" asks for
	// none, as before.
	Think ThinkLevel `json:"think,omitempty"`
	// Stream lets the step show its answer while the model writes it, in
	// the worker's mode for the channel (REPLYFLOW_STREAM); the session
	// sets it where a shown answer can be finished (not when muted, not
	// in heartbeat turns).
	Stream bool `json:"stream,omitempty"`
	// Shown is what an earlier attempt of this step (a crashed worker's,
	// or another model's) already showed: this one edits the same
	// preview, or continues after the blocks sent.
	Shown *Shown `json:"shown,omitempty"`
}

// TurnResult is what the agent answered, and which model answered it.
type TurnResult struct {
	Reply string `json:"reply"`
	Model string `json:"model"`
	// ToolCalls ask for tools to run; their results go to the next model
	// step, where messages steered into the turn are injected too.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage is what the step cost, where the provider said.
	Usage *Usage `json:"usage,omitempty"`
	// ThinkIgnored is set when the request asked for a reasoning effort
	// the answering model's provider does not take.
	ThinkIgnored bool `json:"think_ignored,omitempty"`
	// Shown is what the user saw while the answer streamed: the final
	// delivery replaces the preview, or sends only what follows the
	// blocks. nil when nothing was shown.
	Shown *Shown `json:"shown,omitempty"`
	// Held is set when the step was answered without the model because
	// the session may not call it for now (a spent budget, a breaker's
	// cool-off); nil once a step was let through.
	Held *Hold `json:"held,omitempty"`
}

// Hold says why and until when a session gets no model call.
type Hold struct {
	// Reason is "budget:chat", "budget:sender", "budget:deployment" or
	// "cooloff".
	Reason string    `json:"reason"`
	Until  time.Time `json:"until"`
}

// Built-in tools: staying silent this turn, and stepping back from a
// group conversation.
const (
	SkipResponseTool = "skip_response"
	DisengageTool    = "channel_disengage"
)

// ToolCall is a tool the model asked to run.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON object
	// RequiresApproval is set from the tool's declaration.
	RequiresApproval bool `json:"requires_approval,omitempty"`
	// Attempts, Timeout and Label are set from the tool's declaration
	// too: how often Temporal may make the call (more than once only for
	// a read-only tool, whose repetition changes nothing; zero is once),
	// how long one attempt may take (zero: the turn's timeout), and
	// what the Temporal UI calls it ("mcp docs.search"; empty names it
	// by the tool).
	Attempts int      `json:"attempts,omitempty"`
	Timeout  Duration `json:"timeout,omitempty"`
	Label    string   `json:"label,omitempty"`
}

// ToolResult is what running a tool call gave.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Stored: the tool's activity saved Output in the store; a model
	// step's request may then leave Output empty, and the step reads it
	// from there (runs with changeCost).
	Stored bool `json:"stored,omitempty"`
}

// Reference is the result without its output, when the output is in the
// store: what a later model step's request carries.
func (r ToolResult) Reference() ToolResult {
	if r.Stored {
		r.Output = ""
	}
	return r
}

// ToolRound is one model step that called tools: what it said, what it
// called, and what came back.
type ToolRound struct {
	Text    string       `json:"text,omitempty"`
	Calls   []ToolCall   `json:"calls"`
	Results []ToolResult `json:"results"`
}

// References is the round as a later model step's request carries it:
// each stored result without its output.
func (r ToolRound) References() ToolRound {
	results := make([]ToolResult, len(r.Results))
	for i, res := range r.Results {
		results[i] = res.Reference()
	}
	r.Results = results
	return r
}

// GateRequest asks the gate model about a debounced batch in a gated chat;
// Context is the recent messages before it (at most GateContext in all).
type GateRequest struct {
	Session SessionKey    `json:"session"`
	Context []TurnMessage `json:"context,omitempty"`
	Batch   []TurnMessage `json:"batch"`
	// IndirectMention: the batch names the agent by an alias.
	IndirectMention bool `json:"indirect_mention,omitempty"`
}

// GateResult is the gate model's strict answer.
type GateResult struct {
	Forward bool   `json:"forward"`
	Reason  string `json:"reason,omitempty"`
}

// ClaimRequest asks to make Who ("provider:id") an owner with Code.
type ClaimRequest struct {
	Code string `json:"code"`
	Who  string `json:"who"`
	// ByBot: the sender is a bot (a relay, a bridge, another agent),
	// which becomes no owner; the code, now seen in a chat by whoever
	// the bot relays for, is burnt.
	ByBot bool `json:"by_bot,omitempty"`
}

// GateContext is how many of the latest messages a gated turn (and its
// gate) sees.
const GateContext = 8

// ToolInvocation asks the RunTool activity to run one call.
type ToolInvocation struct {
	Session SessionKey `json:"session"`
	TurnID  string     `json:"turn_id"`
	Call    ToolCall   `json:"call"`
	// StoreResult asks the activity to save the result for the turn's
	// later steps (ToolResult.Stored says it did).
	StoreResult bool `json:"store_result,omitempty"`
}

// Delivery is one chunk of a reply. IdempotencyKey is derived from the
// session, the turn and the chunk index, so a retried delivery is recognised
// by platforms that dedupe.
type Delivery struct {
	Session        SessionKey `json:"session"`
	IdempotencyKey string     `json:"idempotency_key"`
	ThreadID       string     `json:"thread_id,omitempty"`
	ReplyTo        string     `json:"reply_to,omitempty"`
	Text           string     `json:"text"`
	Index          int        `json:"index"`
	Total          int        `json:"total"`
	Buttons        []Button   `json:"buttons,omitempty"`
	// PrivateTo, when set, is the one user (a platform sender ID) meant
	// to see this reply: a refusal of their button press. Where the
	// platform can show a message to one person (an ephemeral message)
	// only they see it; elsewhere it is an ordinary reply.
	PrivateTo string `json:"private_to,omitempty"`
	// PrivateVia is the press's Inbound.ReplyToken, for a platform that
	// can answer one person only through it (an ephemeral follow-up to
	// the press).
	PrivateVia string `json:"private_via,omitempty"`
	// ThenReact are reactions to set once the chunk is out (the last
	// chunk of a reply sets its messages to done): the delivery that runs
	// anyway carries them instead of an activity of their own. Best
	// effort: a refused one is named in Delivered.ReactionsFailed, and
	// the chunk counts as delivered.
	ThenReact []ReactionChange `json:"then_react,omitempty"`
	// Replaces is a streamed preview's platform message ID: the chunk
	// is delivered by editing that message to its text, not as a new one.
	Replaces string `json:"replaces,omitempty"`
	// Whole: Text is a whole reply. The activity cuts it the way the
	// platform measures its messages and delivers the first chunk
	// (Index 0); Delivered.Rest are the others, for the session to
	// deliver in order. ThenReact is set only when the first chunk is
	// the only one. Cutting in the activity keeps a platform's rules out
	// of the session's history: a change of them needs no new release.
	Whole bool `json:"whole,omitempty"`
	// Answers is the message the reply answers (the batch's last: its ID,
	// sender's name and time, never its text), on a delivery that may go
	// out long after the turn answered (one retried as an activity, or
	// parked until a person retries it), and Group whether it was said
	// in a group. Going out REPLYFLOW_STALE_AFTER or more after it, the
	// chunk says which message it answers and how late, as a late turn's
	// reply does, unless the reply already says so.
	Answers *TurnMessage `json:"answers,omitempty"`
	Group   bool         `json:"group,omitempty"`
}

// Button is an inline button under a bot message; pressing it comes back
// as an Inbound whose Action is the button's.
type Button struct {
	Text   string `json:"text"`
	Action string `json:"action"`
}

// Edit replaces the text (and buttons) of a message the bot sent.
type Edit struct {
	Session           SessionKey `json:"session"`
	PlatformMessageID string     `json:"platform_message_id"`
	// ThreadID is the lane the message was sent in (where a thread is a
	// channel of its own, the edit must go there).
	ThreadID string   `json:"thread_id,omitempty"`
	Text     string   `json:"text"`
	Buttons  []Button `json:"buttons,omitempty"`
}

// Delivered is the platform's ID for a delivered chunk.
type Delivered struct {
	PlatformMessageID string `json:"platform_message_id"`
	// ReactionsFailed names the messages whose ThenReact the platform
	// refused; the session sets those the usual way.
	ReactionsFailed []string `json:"reactions_failed,omitempty"`
	// Rest are the chunks after the first of a Whole delivery, in order;
	// none when the reply fit in one (and its ThenReact was set).
	Rest []string `json:"rest,omitempty"`
}

// ReactionChange sets the reaction on one user message to State;
// ReactionNone clears it. It is idempotent.
type ReactionChange struct {
	Session   SessionKey    `json:"session"`
	MessageID string        `json:"message_id"`
	ThreadID  string        `json:"thread_id,omitempty"`
	State     ReactionState `json:"state"`
	// Attempt counts earlier failed tries of this change.
	Attempt int `json:"attempt,omitempty"`
}

// Model error types: every provider failure is an ApplicationError of one
// of these types, and the workflow decides fallback and reset from it.
const (
	ErrRateLimited     = "RateLimited"
	ErrOverloaded      = "Overloaded"
	ErrTimeout         = "Timeout"
	ErrAuth            = "Auth"
	ErrBilling         = "Billing"
	ErrContextOverflow = "ContextOverflow"
	ErrContentFilter   = "ContentFilter"
	ErrModelNotFound   = "ModelNotFound"
	ErrFormat          = "Format"
	// ErrImagesUnsupported: the model takes no images and the turn has
	// one, while a later model of the round does; the step moves on to
	// it. (With none left, the model is asked and told the image is not
	// shown, so it can say so.)
	ErrImagesUnsupported = "ImagesUnsupported"
)
