package retiring

import "github.com/replyflow/replyflow/workflows"

// The names this release shares with the chat session workflow live in
// package workflows: the state both carry (a run of this release moves on
// into a chat session with it), the signal, query and search attribute
// names, and the metric series. The aliases let the frozen code read as it
// did when it lived there.
type (
	ActiveTurn      = workflows.ActiveTurn
	ActiveView      = workflows.ActiveView
	Batch           = workflows.Batch
	BatchView       = workflows.BatchView
	Buffer          = workflows.Buffer
	BufferView      = workflows.BufferView
	CallProposal    = workflows.CallProposal
	ChatView        = workflows.ChatView
	ControlState    = workflows.ControlState
	Cooldown        = workflows.Cooldown
	Counters        = workflows.Counters
	DeliveryRecord  = workflows.DeliveryRecord
	DirectReply     = workflows.DirectReply
	EngagementState = workflows.EngagementState
	HeartbeatRecord = workflows.HeartbeatRecord
	IntakeState     = workflows.IntakeState
	Overflow        = workflows.Overflow
	Participant     = workflows.Participant
	Proposal        = workflows.Proposal
	ProposalsState  = workflows.ProposalsState
	Reaction        = workflows.Reaction
	ReactionsState  = workflows.ReactionsState
	ReloadRequest   = workflows.ReloadRequest
	RepliesState    = workflows.RepliesState
	RetiredParams   = workflows.RetiredParams
	RetryRequest    = workflows.RetryRequest
	SeenMessage     = workflows.SeenMessage
	SessionParams   = workflows.SessionParams
	Snapshot        = workflows.Snapshot
	State           = workflows.State
	Status          = workflows.Status
	TurnOptions     = workflows.TurnOptions
	TurnProgress    = workflows.TurnProgress
	TurnRecord      = workflows.TurnRecord
	TurnState       = workflows.TurnState
	WaitingStep     = workflows.WaitingStep
)

const (
	ChatSessionName            = workflows.ChatSessionName
	HeartbeatAcked             = workflows.HeartbeatAcked
	HeartbeatDelivered         = workflows.HeartbeatDelivered
	HeartbeatFailed            = workflows.HeartbeatFailed
	HeartbeatMuted             = workflows.HeartbeatMuted
	HeartbeatSkippedBusy       = workflows.HeartbeatSkippedBusy
	HeartbeatSkippedEmpty      = workflows.HeartbeatSkippedEmpty
	MetricDeliveries           = workflows.MetricDeliveries
	MetricFallbacks            = workflows.MetricFallbacks
	MetricFirstChunk           = workflows.MetricFirstChunk
	MetricGateDecisions        = workflows.MetricGateDecisions
	MetricHeartbeats           = workflows.MetricHeartbeats
	MetricModelAttempts        = workflows.MetricModelAttempts
	MetricParked               = workflows.MetricParked
	MetricProposals            = workflows.MetricProposals
	MetricReactionsClearedLate = workflows.MetricReactionsClearedLate
	MetricTurnDuration         = workflows.MetricTurnDuration
	MetricTurns                = workflows.MetricTurns
	PhaseDelivering            = workflows.PhaseDelivering
	PhaseModel                 = workflows.PhaseModel
	PhaseParked                = workflows.PhaseParked
	PhaseWaiting               = workflows.PhaseWaiting
	ProposalApproved           = workflows.ProposalApproved
	ProposalExpired            = workflows.ProposalExpired
	ProposalPending            = workflows.ProposalPending
	ProposalRejected           = workflows.ProposalRejected
	QueryState                 = workflows.QueryState
	SignalDisengage            = workflows.SignalDisengage
	SignalFeedback             = workflows.SignalFeedback
	SignalHeartbeat            = workflows.SignalHeartbeat
	SignalInbound              = workflows.SignalInbound
	SignalProposal             = workflows.SignalProposal
	SignalReload               = workflows.SignalReload
	SignalRetry                = workflows.SignalRetry
	StatusDebouncing           = workflows.StatusDebouncing
	StatusDelivering           = workflows.StatusDelivering
	StatusDeliveryFailed       = workflows.StatusDeliveryFailed
	StatusGating               = workflows.StatusGating
	StatusIdle                 = workflows.StatusIdle
	StatusThinking             = workflows.StatusThinking
	StatusWaitingUser          = workflows.StatusWaitingUser
	UpdateDecide               = workflows.UpdateDecide
	WorkflowName               = workflows.WorkflowName
)

var (
	AttrChannel          = workflows.AttrChannel
	AttrChat             = workflows.AttrChat
	AttrLastInboundAt    = workflows.AttrLastInboundAt
	AttrPendingProposals = workflows.AttrPendingProposals
	AttrQueueDepth       = workflows.AttrQueueDepth
	AttrState            = workflows.AttrState
)

type msgRef = workflows.MessageRef
