package workflows

import (
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// Heartbeat outcomes, as /status and the state query show them.
const (
	HeartbeatSkippedBusy  = "skipped: a turn was running or messages were waiting"
	HeartbeatSkippedEmpty = "skipped: the checklist is empty or missing"
	HeartbeatAcked        = "nothing to report (HEARTBEAT_OK)"
	HeartbeatDelivered    = "reported in the chat"
	HeartbeatMuted        = "report kept back (/send off)"
	HeartbeatFailed       = "failed"
)

// ControlState is the durable state of the control part.
type ControlState struct {
	Think     pipeline.ThinkLevel `json:"chat_think,omitempty"`
	Verbose   bool                `json:"chat_verbose,omitempty"`
	UsageMode pipeline.UsageMode  `json:"chat_usage,omitempty"`
	// Muted is /send off: turns run, their replies are not sent.
	Muted bool `json:"chat_muted,omitempty"`
	// ThinkNoteDue: the next turn says so if its model takes no
	// reasoning effort (once after /think changed).
	ThinkNoteDue bool           `json:"think_note_due,omitempty"`
	UsageTotal   pipeline.Usage `json:"usage_total,omitzero"`
	// IdleFrom is when the session last went idle after something a
	// person did (PersonActed): the idle TTL counts from it, so heartbeat
	// turns keep no session alive.
	IdleFrom    time.Time `json:"idle_from,omitzero"`
	PersonActed bool      `json:"person_acted,omitempty"`
	// LastHeartbeat is the latest tick and what became of it.
	LastHeartbeat *HeartbeatRecord `json:"last_heartbeat,omitempty"`
	// HeartbeatTicks are the latest tick IDs, oldest first (at most
	// heartbeatTicksKept).
	HeartbeatTicks []string `json:"heartbeat_ticks,omitempty"`
}

// HeartbeatRecord is one heartbeat tick as operators see it.
type HeartbeatRecord struct {
	TickID      string    `json:"tick_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	At          time.Time `json:"at"`
	Outcome     string    `json:"outcome"`
	TurnID      string    `json:"turn_id,omitempty"`
}

// TurnOptions are the chat settings one turn runs with: the session's,
// with the directives of its messages over them.
type TurnOptions struct {
	Think   pipeline.ThinkLevel `json:"think,omitempty"`
	Verbose bool                `json:"verbose,omitempty"`
	Usage   pipeline.UsageMode  `json:"usage,omitempty"`
	// Model is a /model directive for this turn: strict, like the
	// session's /model.
	Model string `json:"model,omitempty"`
	Muted bool   `json:"muted,omitempty"`
	// ThinkNote: say in the footer when the model takes no reasoning
	// effort.
	ThinkNote bool `json:"think_note,omitempty"`
}

// EngagementState is the durable state of the engagement part: who speaks
// here, the sticky credits, what the agent watched without answering, the
// peer-bot loop guard, and a gated chat's batch.
type EngagementState struct {
	Participants       []Participant         `json:"participants,omitempty"`
	Sticky             pipeline.StickyLedger `json:"sticky,omitempty"`
	Observed           []pipeline.Observed   `json:"observed,omitempty"`
	LoopGuard          pipeline.LoopGuard    `json:"loop_guard"`
	BotThreads         []string              `json:"bot_threads,omitempty"`
	DisengagedTurn     int                   `json:"disengaged_turn,omitempty"`
	ActivationOverride string                `json:"activation_override,omitempty"`
	LastDenied         string                `json:"last_denied,omitempty"`
	// GateBuffer is a gated chat's batch waiting for the gate model.
	GateBuffer  []pipeline.Inbound `json:"gate_buffer,omitempty"`
	GateFlushAt time.Time          `json:"gate_flush_at,omitzero"`
	GateFirstAt time.Time          `json:"gate_first_at,omitzero"`
	GateSeq     int                `json:"gate_seq,omitempty"`
	// Membership is the newest member count an adapter sent with a
	// message (one, replaced; runs from before the change that added it
	// keep none).
	Membership *pipeline.MembershipCount `json:"membership,omitempty"`
}

// Participant is someone seen speaking in the chat recently.
type Participant struct {
	ID       string    `json:"id"` // "provider:id"
	Name     string    `json:"name,omitempty"`
	IsBot    bool      `json:"is_bot,omitempty"`
	LastSeen time.Time `json:"last_seen"`
}

// Cooldown keeps a model that was rate limited or overloaded out of the
// chain until Until; Level counts such failures in a row.
type Cooldown struct {
	Model string    `json:"model"`
	Until time.Time `json:"until"`
	Level int       `json:"level"`
}

// IntakeState is the durable state of the intake part.
type IntakeState struct {
	// Seen holds recently seen platform message IDs, least recently seen
	// first, so a message delivered twice is processed once.
	Seen []SeenMessage `json:"seen"`
	// Buffers are the open debounce windows, one per BufferKey.
	Buffers   []Buffer `json:"buffers"`
	BufferSeq int      `json:"buffer_seq"`
	// QueueOverride is the session's /queue setting, over the defaults.
	QueueOverride *pipeline.QueuePatch `json:"queue_override,omitempty"`
	LastInboundAt time.Time            `json:"last_inbound_at"`
}

// Proposal states.
const (
	ProposalPending  = "pending"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
	ProposalExpired  = "expired"
)

// ProposalsState is the durable state of the proposals part.
type ProposalsState struct {
	// Proposals are the tool calls waiting for (or recently given) a
	// person's decision.
	Proposals   []Proposal `json:"proposals,omitempty"`
	ProposalSeq int        `json:"proposal_seq,omitempty"`
}

// Proposal is a tool call that waits for a person's decision.
type Proposal struct {
	ID        string            `json:"id"`
	Call      pipeline.ToolCall `json:"call"`
	Summary   string            `json:"summary"`
	Requester string            `json:"requester"` // "provider:id"
	Origin    string            `json:"origin"`    // the inbound message it came from
	ThreadID  string            `json:"thread_id,omitempty"`
	TurnID    string            `json:"turn_id"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`
	Status    string            `json:"status"`
	DecidedBy string            `json:"decided_by,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	// MessageID is the platform's ID of the proposal message.
	MessageID string `json:"message_id,omitempty"`
}

// ReactionsState is the durable state of the reactions part.
type ReactionsState struct {
	// Reactions is the reaction state of user messages not yet cleared.
	Reactions []Reaction `json:"reactions"`
	// ReactionChanges are reaction updates not yet applied, at most one
	// per message (a newer state replaces one not yet sent).
	ReactionChanges []pipeline.ReactionChange `json:"reaction_changes"`
}

// RepliesState is the durable state of the replies part.
type RepliesState struct {
	// Replies are direct answers (commands) not yet delivered.
	Replies []DirectReply `json:"replies"`
	Notices int           `json:"notices,omitempty"`
}

// DirectReply is an answer the session gives itself, without the model.
type DirectReply struct {
	MessageID string `json:"message_id"`
	ThreadID  string `json:"thread_id,omitempty"`
	Text      string `json:"text"`
	// Key tells apart several notices about one message; a command's
	// answer has none.
	Key string `json:"key,omitempty"`
	// To and Via are the Delivery's PrivateTo and PrivateVia: a notice
	// for one user.
	To  string `json:"to,omitempty"`
	Via string `json:"via,omitempty"`
}

// TurnState is the durable state of the turns part.
type TurnState struct {
	// Queue holds batches waiting for a turn, oldest first.
	Queue []Batch `json:"queue"`
	// Overflow is what the summarize drop policy kept of dropped batches,
	// for the next turn's prompt.
	Overflow *Overflow `json:"overflow,omitempty"`
	// Active is the running turn.
	Active *ActiveTurn `json:"active,omitempty"`
	// AbortedLastRun makes the next turn's text say the previous run was
	// aborted.
	AbortedLastRun bool `json:"aborted_last_run,omitempty"`
	// NewTranscript makes the next turn start a fresh transcript.
	NewTranscript bool `json:"new_transcript,omitempty"`
	// ModelOverride is the model chosen with /model: strict, no fallback.
	ModelOverride string `json:"model_override,omitempty"`
	// Cooldowns are models skipped for a while after rate limits.
	Cooldowns  []Cooldown       `json:"cooldowns,omitempty"`
	TurnSeq    int              `json:"turn_seq"`
	LastTurn   *TurnRecord      `json:"last_turn,omitempty"`
	Deliveries []DeliveryRecord `json:"deliveries"`
}

// MessageRef names a user message whose reaction the session manages.
type MessageRef struct{ ID, Thread string }

// TurnProgress is where a turn's coroutine stands between the things it
// waits for. It lives in ActiveTurn, so a turn that waits for decisions
// or is parked, with nothing of its own under way, is carried by
// continue-as-new and goes on in the next run (resumeTurn) instead of
// holding a busy chat's history open for as long as it waits.
type TurnProgress struct {
	// Text is the turn's prompt text, steered messages included.
	Text string `json:"text"`
	// Refs are the user messages whose reactions follow the turn.
	Refs []MessageRef `json:"refs,omitempty"`
	// Anchor is the index in ActiveTurn.Messages of the message the
	// reply answers.
	Anchor int `json:"anchor"`
	// Rounds are the tool rounds so far, results as store references.
	Rounds []pipeline.ToolRound `json:"rounds,omitempty"`
	// Reset: the turn already started a new transcript after a context
	// overflow, and does not again.
	Reset bool `json:"reset,omitempty"`
	// Waiting is the step whose tool calls wait for decisions.
	Waiting *WaitingStep `json:"waiting,omitempty"`
	// Chunks are the reply's chunks once delivery began; Next is the
	// first not yet delivered.
	Chunks []string `json:"chunks,omitempty"`
	Next   int      `json:"next,omitempty"`
}

// WaitingStep is a model step whose tool calls wait for decisions: its
// calls, and the proposal of each call that needs one.
type WaitingStep struct {
	Round     pipeline.ToolRound `json:"round"`
	Proposals []CallProposal     `json:"proposals"`
}

// CallProposal ties a tool call to the proposal posted for it.
type CallProposal struct {
	CallID     string `json:"call_id"`
	ProposalID string `json:"proposal_id"`
}
