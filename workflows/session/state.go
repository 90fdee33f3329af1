package session

import (
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// Params start a run: the session's key and, after continue-as-new, the
// state the previous run carried.
type Params struct {
	Session pipeline.SessionKey `json:"session"`
	State   *State              `json:"state,omitempty"`
	// Retired is the state of a run of the release before (type
	// session, since deleted) that continued as new into this one
	// (workflows.RetiredParams).
	Retired *workflows.State `json:"retired,omitempty"`
}

// State is everything a session keeps between events and across runs,
// one slice per part. It is carried whole by continue-as-new, so every
// slice keeps to the bounds its part states.
type State struct {
	Intake     IntakeState     `json:"intake"`
	Engagement EngagementState `json:"engagement"`
	Queue      QueueState      `json:"queue"`
	Turn       TurnState       `json:"turn"`
	Reactions  ReactionsState  `json:"reactions"`
	Proposals  ProposalsState  `json:"proposals"`
	Control    ControlState    `json:"control"`
	Replies    RepliesState    `json:"replies"`
	Counters   Counters        `json:"counters"`
}

// Batch is messages that go to one turn together, with the queue
// settings they arrived under.
type Batch struct {
	Messages []pipeline.Inbound     `json:"messages"`
	Queue    pipeline.QueueSettings `json:"queue"`
	// Queued: the batch waited behind a turn.
	Queued bool `json:"queued,omitempty"`
	// NoAnchor: the reply is not threaded under the batch's last message
	// (a batch the gate let through).
	NoAnchor bool `json:"no_anchor,omitempty"`
	// Directives are inline settings the batch's message carried.
	Directives *pipeline.Directives `json:"directives,omitempty"`
}

// Last is the batch's newest message, the one a reply answers.
func (b Batch) Last() pipeline.Inbound { return b.Messages[len(b.Messages)-1] }

// Counters count what the session did, for the state query and metrics.
type Counters struct {
	Inbound     int `json:"inbound"`
	Duplicates  int `json:"duplicates"`
	Turns       int `json:"turns"`
	Dropped     int `json:"dropped"`
	Steered     int `json:"steered"`
	Interrupted int `json:"interrupted"`
	Commands    int `json:"commands"`
	Aborted     int `json:"aborted"`
	Denied      int `json:"denied"`
	Observed    int `json:"observed"`
	Gated       int `json:"gated"`
	Resets      int `json:"resets"`
	Runs        int `json:"runs"`
}

// msgRef is a user message a reaction follows.
type msgRef struct {
	ID     string `json:"id"`
	Thread string `json:"thread,omitempty"`
}

func refsOf(msgs ...pipeline.Inbound) []msgRef {
	refs := make([]msgRef, len(msgs))
	for i, m := range msgs {
		refs[i] = msgRef{ID: m.MessageID, Thread: m.ThreadID}
	}
	return refs
}

// WorkflowName is the registered type of this session workflow.
const WorkflowName = workflows.ChatSessionName
