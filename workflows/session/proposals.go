package session

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// Proposals' bounds and defaults.
const (
	// keptProposals bounds the decided proposals kept to answer late or
	// repeated decisions (a double click, a second approver); the earliest
	// decided go first.
	keptProposals = 50
	// maxPendingProposals bounds the proposals waiting at once. Only the
	// running turn's step proposes, so this is a model asking for more
	// approvals in one step than a person would go through: the calls past
	// it are refused at once, unposted.
	maxPendingProposals = 32
	// defaultProposalTTL is how long a proposal waits when
	// REPLYFLOW_PROPOSAL_TTL is unset.
	defaultProposalTTL = 24 * time.Hour
	// maxReasonBytes bounds the reason a decided proposal keeps, and
	// shows and tells the model: the decider writes it (/reject <id>
	// <reason> takes a whole message, an operator's --reason any length),
	// and each of the keptProposals carries its own in the state.
	maxReasonBytes = 512
	// maxDeciderBytes bounds the decider a proposal keeps: a chat
	// decider ("provider:id") is never longer, an operator's name may be.
	maxDeciderBytes = 256
)

// Proposal states.
const (
	ProposalPending  = "pending"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
	ProposalExpired  = "expired"
)

// proposalsTimer is the one timer all proposals' expiries share, armed at
// the earliest.
const proposalsTimer TimerID = "proposals"

// sessionDecider is who decides what no person decided: a proposal that
// could not be posted, one past the bound, one of a stopped turn.
const sessionDecider = "operator:replyflow"

// proposalKeyPrefix starts the TurnID of a proposal's deliveries and the
// Key of its edits, so their outcomes come back to this part.
const proposalKeyPrefix = "proposal/"

// ProposalKey reports whether a ChunkDelivered's TurnID or a Returned's
// Key is one of the proposals part's.
func ProposalKey(key string) bool { return strings.HasPrefix(key, proposalKeyPrefix) }

// ProposalsState is the proposals part: the tool calls waiting for a
// person's decision, and the recently decided ones. The pending are in
// the order they were proposed, the decided in the order they were
// decided (a decision moves its proposal to the end), so pruning drops
// the earliest decided.
type ProposalsState struct {
	Proposals []Proposal `json:"proposals,omitempty"`
	Seq       int        `json:"seq,omitempty"`
	// Refusals numbers the refusals told to pressers, for their
	// idempotency keys.
	Refusals int `json:"refusals,omitempty"`
	// ExpiryArmedAt is when the proposals timer fires, zero when disarmed.
	ExpiryArmedAt time.Time `json:"expiry_armed_at,omitzero"`
}

// Proposal is a tool call that waits for (or was given) a person's
// decision. A decided proposal keeps no tool arguments: what is kept of
// it answers late decisions and shows the outcome, for which the
// summary is enough.
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
	// MessageID is the platform's ID of the proposal message, once posted.
	MessageID string `json:"message_id,omitempty"`
}

// ProposalAsked: a turn's step has a call that needs a person's approval;
// the proposals part posts it and answers with ProposalDecided.
type ProposalAsked struct {
	TurnID string
	Call   pipeline.ToolCall
	Origin pipeline.Inbound
}

// WithdrawProposals: a turn stopped (aborted, cancelled) while its calls
// waited; their proposals are rejected and their buttons removed.
type WithdrawProposals struct{ TurnID, Reason string }

// ProposalDecided: a proposal of a turn was decided, expired or
// withdrawn; the turn runs the call only when Approved.
type ProposalDecided struct {
	TurnID     string
	ProposalID string
	CallID     string
	Tool       string
	Approved   bool
	Expired    bool
	DecidedBy  string
	Reason     string
}

func (ProposalAsked) isEvent()     {}
func (WithdrawProposals) isEvent() {}
func (ProposalDecided) isEvent()   {}

// Refused is what the model reads of a call that was not approved, and
// false for an approved one, which runs.
func (d ProposalDecided) Refused() (pipeline.ToolResult, bool) {
	if d.Approved {
		return pipeline.ToolResult{}, false
	}
	res := pipeline.ToolResult{CallID: d.CallID, Name: d.Tool, IsError: true}
	if d.Expired {
		res.Output = "Nobody approved this call in time (expired). It was not run."
		return res, true
	}
	reason := ""
	if d.Reason != "" {
		reason = ": " + d.Reason
	}
	res.Output = "The user rejected this call (" + d.DecidedBy + ")" + reason + ". It was not run."
	return res, true
}

// Propose records a proposal for call, which turnID's step made in
// answer to origin, and posts its message with Approve and Reject
// buttons; it returns the proposal's ID. A call past
// maxPendingProposals is rejected at once.
func (s *ProposalsState) Propose(env Env, turnID string, call pipeline.ToolCall, origin pipeline.Inbound) ([]Effect, string) {
	s.Seq++
	ttl := env.Settings.ProposalTTL.D()
	if ttl <= 0 {
		ttl = defaultProposalTTL
	}
	p := Proposal{
		ID: "p" + strconv.Itoa(s.Seq), Call: call, Summary: pipeline.SummarizeArgs(call.Arguments),
		Requester: origin.Channel + ":" + origin.SenderID, Origin: origin.MessageID, ThreadID: origin.ThreadID,
		TurnID: turnID, CreatedAt: env.Now, ExpiresAt: env.Now.Add(ttl), Status: ProposalPending,
	}
	if s.Pending() >= maxPendingProposals {
		env.logger().Warn("Proposal refused: too many proposals wait for a decision", "proposal", p.ID, "pending", s.Pending())
		s.Proposals = append(s.Proposals, p)
		return s.after(s.settle(env, p.ID, ProposalRejected, sessionDecider, "too many calls wait for approval already")), p.ID
	}
	s.Proposals = append(s.Proposals, p)
	text, buttons := pipeline.RenderProposal(p.view(env))
	post := Deliver{TurnID: proposalKeyPrefix + p.ID, Delivery: pipeline.Delivery{
		Session: env.Key, IdempotencyKey: env.Key.WorkflowID() + "/proposal/" + turnID + "/" + p.ID,
		ThreadID: origin.ThreadID, ReplyTo: origin.MessageID, Text: text, Buttons: buttons, Total: 1,
	}}
	return s.after([]Effect{post}), p.ID
}

// Known checks what a decision needs no settings for: its form, and that
// its proposal is kept. The update's validator checks this much before
// the run's settings are loaded.
func (s *ProposalsState) Known(env Env, d pipeline.Decision) error {
	if err := d.Validate(); err != nil {
		return err
	}
	if s.index(d.ID) < 0 {
		return fmt.Errorf("unknown proposal %q in %s", d.ID, env.Key.WorkflowID())
	}
	return nil
}

// Check refuses a decision that is malformed, about an unknown proposal,
// by someone not allowed, or contrary to one already made. The same
// decision by the same person again (a double click) passes: it is
// answered, and changes nothing. ownerVerified: the adapter verified the
// decider as an owner (Inbound.SenderIsOwner). Check changes nothing.
func (s *ProposalsState) Check(env Env, d pipeline.Decision, ownerVerified bool) error {
	_, err := s.check(env, d, ownerVerified)
	return err
}

func (s *ProposalsState) check(env Env, d pipeline.Decision, ownerVerified bool) (repeat bool, err error) {
	if err := s.Known(env, d); err != nil {
		return false, err
	}
	p := s.Proposals[s.index(d.ID)]
	if !ownerVerified && !mayDecide(env, d.By, p) {
		also := ""
		if env.Settings.RequesterMayDecide {
			also = " and its requester"
		}
		return false, fmt.Errorf("%s is not allowed to decide proposal %s: only owners%s may", d.By, d.ID, also)
	}
	if p.Status != ProposalPending {
		// A decider kept before it was cut (in state an earlier run
		// carried) matches whole.
		if p.Status == outcomeOf(d.Decision) && (p.DecidedBy == d.By || p.DecidedBy == keptDecider(d.By)) {
			return true, nil
		}
		decider := p.DecidedBy
		if decider == "" {
			decider = "its deadline"
		}
		return false, fmt.Errorf("proposal %s was already %s by %s", d.ID, p.Status, decider)
	}
	return false, nil
}

// mayDecide: owners (and "*"), operators (anyone with Temporal access, who
// decides through the CLI or the UI as "operator:<name>"), and the
// requester when the settings allow it.
func mayDecide(env Env, by string, p Proposal) bool {
	if strings.HasPrefix(by, "operator:") || pipeline.Allowed(by, env.Settings.Owners) {
		return true
	}
	return env.Settings.RequesterMayDecide && by == p.Requester
}

// Decide answers DecisionTaken (the "proposal" signal): a decision that
// passes Check is recorded; a refused one is logged, a signal having no
// one to answer.
func (s *ProposalsState) Decide(env Env, d pipeline.Decision) []Effect {
	effects, _, err := s.decide(env, d, false)
	if err != nil {
		env.logger().Warn("Proposal decision refused", "proposal", d.ID, "by", d.By, "error", err)
	}
	return effects
}

// Update is the "decide" update's handler: Decide, with the answer the
// caller reads ("Proposal p3 approved by operator:eve.") or the refusal.
func (s *ProposalsState) Update(env Env, d pipeline.Decision) ([]Effect, string, error) {
	return s.decide(env, d, false)
}

// pressed reads a press's action: the decision it asks for (by the
// presser), or why this session refuses it: its button is on a proposal
// of another session, which a press reaches only while the session scope
// routes it there (pipeline.Inbound.SessionIn). ok is false for an action
// that names no decision, which is ignored.
func pressed(env Env, in pipeline.Inbound) (d pipeline.Decision, ok bool, refusal error) {
	decision, id, sessionSender, ok := pipeline.ParseProposalAction(in.Action)
	if !ok {
		return pipeline.Decision{}, false, nil
	}
	d = pipeline.Decision{ID: id, Decision: decision, By: in.Channel + ":" + in.SenderID}
	if sessionSender != "" && sessionSender != env.Key.Sender {
		theirs := env.Key
		theirs.Sender = sessionSender
		return d, true, fmt.Errorf("this button is for proposal %s of session %s, not of this one (the session scope may have changed since it was posted), so nothing was decided; an operator can decide it with replyflow %s %s %s",
			id, theirs.WorkflowID(), decision, theirs.WorkflowID(), id)
	}
	return d, true, nil
}

// pressedOn refuses a press on a message (pressed) that is not the
// message of the proposal it decides: a button of another session's
// proposal of the same number, posted before buttons named their session,
// which reached this session as the presser's own. A press on a message
// the platform does not name, or before its proposal's message is out,
// is left to check.
func (s *ProposalsState) pressedOn(d pipeline.Decision, pressed string) error {
	i := s.index(d.ID)
	if i < 0 || pressed == "" || s.Proposals[i].MessageID == "" || s.Proposals[i].MessageID == pressed {
		return nil
	}
	return fmt.Errorf("this button is not on the message of proposal %s of this session (it may be another sender's proposal of the same number), so nothing was decided; an operator can decide that one with replyflow %s <its session> %s",
		d.ID, d.Decision, d.ID)
}

// decide records a decision that passes check, and says how the
// proposal stands.
func (s *ProposalsState) decide(env Env, d pipeline.Decision, ownerVerified bool) ([]Effect, string, error) {
	repeat, err := s.check(env, d, ownerVerified)
	if err != nil {
		return nil, "", err
	}
	answer := fmt.Sprintf("Proposal %s %s by %s.", d.ID, outcomeOf(d.Decision), d.By)
	if repeat {
		return nil, answer, nil
	}
	env.logger().Info("Proposal decided", "proposal", d.ID, "decision", d.Decision, "by", d.By)
	return s.after(s.settle(env, d.ID, outcomeOf(d.Decision), d.By, d.Reason)), answer, nil
}

func outcomeOf(decision string) string {
	if decision == pipeline.DecisionApprove {
		return ProposalApproved
	}
	return ProposalRejected
}

// Fired answers the proposals timer: every pending proposal whose time
// has come expires.
func (s *ProposalsState) Fired(env Env) []Effect {
	s.ExpiryArmedAt = time.Time{}
	var due []string
	for _, p := range s.Proposals {
		if p.Status == ProposalPending && !env.Now.Before(p.ExpiresAt) {
			due = append(due, p.ID)
		}
	}
	var out []Effect
	for _, id := range due {
		env.logger().Info("Proposal expired", "proposal", id)
		out = append(out, s.settle(env, id, ProposalExpired, "", "expired")...)
	}
	return s.after(out)
}

// Withdraw answers WithdrawProposals: the turn's pending proposals are
// rejected for reason.
func (s *ProposalsState) Withdraw(env Env, turnID, reason string) []Effect {
	var pending []string
	for _, p := range s.Proposals {
		if p.TurnID == turnID && p.Status == ProposalPending {
			pending = append(pending, p.ID)
		}
	}
	var out []Effect
	for _, id := range pending {
		out = append(out, s.settle(env, id, ProposalRejected, sessionDecider, reason)...)
	}
	return s.after(out)
}

// Delivered answers the ChunkDelivered of a proposal's message (its
// platform ID is kept for the edit that shows the outcome) or of a
// refusal. A proposal whose message could not be posted is rejected:
// nobody can see it, so nobody can decide it.
func (s *ProposalsState) Delivered(env Env, ev ChunkDelivered) []Effect {
	id, ok := strings.CutPrefix(ev.TurnID, proposalKeyPrefix)
	if !ok {
		return nil
	}
	if strings.Contains(id, "/") {
		if ev.Failure != nil {
			env.logger().Warn("Button press refusal not delivered", "key", ev.TurnID, "error", ev.Failure)
		}
		return nil
	}
	i := s.index(id)
	if i < 0 {
		return nil // decided and pruned while its message went out
	}
	if ev.Failure != nil {
		env.logger().Error("Proposal message not delivered", "proposal", id, "error", ev.Failure)
		if s.Proposals[i].Status != ProposalPending {
			return nil
		}
		return s.after(s.settle(env, id, ProposalRejected, sessionDecider, "the proposal could not be posted"))
	}
	s.Proposals[i].MessageID = ev.Delivered.PlatformMessageID
	if s.Proposals[i].Status == ProposalPending {
		return []Effect{Emit{ProposalPosted{TurnID: s.Proposals[i].TurnID}}}
	}
	// Decided while its message went out: the buttons go now.
	if edit, ok := s.Proposals[i].edit(env); ok {
		return []Effect{edit}
	}
	return nil
}

// ProposalPosted: a pending proposal's message is out, for the turn
// that waits for it to show ⏳ (after the message, not before it).
type ProposalPosted struct{ TurnID string }

func (ProposalPosted) isEvent() {}

// Edited answers the Returned of a proposal message's edit.
func (s *ProposalsState) Edited(env Env, ev Returned) []Effect {
	if ev.Failure != nil {
		env.logger().Warn("Proposal message not updated", "key", ev.Key, "error", ev.Failure)
	}
	return nil
}

// Resume starts again what a previous run carried: the expiry timer.
func (s *ProposalsState) Resume(env Env) []Effect {
	s.ExpiryArmedAt = time.Time{}
	return s.expiry()
}

// Pending is how many proposals wait for a decision.
func (s *ProposalsState) Pending() int {
	n := 0
	for _, p := range s.Proposals {
		if p.Status == ProposalPending {
			n++
		}
	}
	return n
}

// settle decides proposal id as status: its arguments are dropped, its
// decider and reason are cut to their bounds (what it keeps is what it
// shows and tells the turn), it moves to the end of the list, the oldest
// decided beyond keptProposals are pruned, its message loses its
// buttons and its turn hears of it.
// It works on a copy, so pruning (which shifts the list) cannot change
// what it reports.
func (s *ProposalsState) settle(env Env, id, status, by, reason string) []Effect {
	i := s.index(id)
	if i < 0 {
		return nil
	}
	p := s.Proposals[i]
	by, reason = keptDecider(by), pipeline.CutBytes(reason, maxReasonBytes)
	p.Status, p.DecidedBy, p.Reason = status, by, reason
	p.Call.Arguments = ""
	s.Proposals = append(append(s.Proposals[:i:i], s.Proposals[i+1:]...), p)
	s.prune()
	out := []Effect{Count{Name: workflows.MetricProposals, Tags: map[string]string{"outcome": status}}}
	if edit, ok := p.edit(env); ok {
		out = append(out, edit)
	}
	return append(out, Emit{Event: ProposalDecided{
		TurnID: p.TurnID, ProposalID: p.ID, CallID: p.Call.ID, Tool: p.Call.Name,
		Approved: status == ProposalApproved, Expired: status == ProposalExpired, DecidedBy: by, Reason: reason,
	}})
}

// keptDecider is the decider by as a decided proposal keeps it.
func keptDecider(by string) string { return pipeline.CutBytes(by, maxDeciderBytes) }

// prune drops the earliest decided proposals beyond keptProposals.
func (s *ProposalsState) prune() {
	decided := len(s.Proposals) - s.Pending()
	kept := s.Proposals[:0]
	for _, p := range s.Proposals {
		if p.Status != ProposalPending && decided > keptProposals {
			decided--
			continue
		}
		kept = append(kept, p)
	}
	s.Proposals = kept
}

// after is what follows any change of the proposals: the pending count
// is published, and the expiry timer moves to the earliest expiry.
func (s *ProposalsState) after(out []Effect) []Effect {
	return append(append(out, Publish{}), s.expiry()...)
}

// expiry arms the proposals timer at the earliest pending expiry, or
// disarms it when nothing waits.
func (s *ProposalsState) expiry() []Effect {
	var next time.Time
	pending := 0
	for _, p := range s.Proposals {
		if p.Status == ProposalPending {
			pending++
			if next.IsZero() || p.ExpiresAt.Before(next) {
				next = p.ExpiresAt
			}
		}
	}
	switch {
	case next.IsZero() && !s.ExpiryArmedAt.IsZero():
		s.ExpiryArmedAt = time.Time{}
		return []Effect{Disarm{Timer: proposalsTimer}}
	case !next.IsZero() && !next.Equal(s.ExpiryArmedAt):
		s.ExpiryArmedAt = next
		return []Effect{Arm{Timer: proposalsTimer, At: next, Summary: fmt.Sprintf("expire proposals (%d pending)", pending)}}
	}
	return nil
}

func (s *ProposalsState) index(id string) int {
	for i := range s.Proposals {
		if s.Proposals[i].ID == id {
			return i
		}
	}
	return -1
}

// view is what p's message shows; its buttons name the session's sender,
// so that a press on them reaches this session whoever presses.
func (p Proposal) view(env Env) pipeline.ProposalView {
	v := pipeline.ProposalView{ID: p.ID, Tool: p.Call.Name, Summary: p.Summary, Requester: p.Requester, ExpiresAt: p.ExpiresAt,
		DecidedBy: p.DecidedBy, Reason: p.Reason, SessionSender: env.Key.Sender}
	if p.Status != ProposalPending {
		v.Outcome = p.Status
	}
	return v
}

// edit is the Call that shows p as it stands on its message (in its
// thread), once the message is out.
func (p Proposal) edit(env Env) (Call, bool) {
	if p.MessageID == "" {
		return Call{}, false
	}
	text, buttons := pipeline.RenderProposal(p.view(env))
	return Call{
		Key:      proposalKeyPrefix + p.ID + "/edit",
		Activity: pipeline.ActivityEdit,
		Args:     []any{pipeline.Edit{Session: env.Key, PlatformMessageID: p.MessageID, ThreadID: p.ThreadID, Text: text, Buttons: buttons}},
		Summary:  "show the outcome of proposal " + p.ID,
		Timeout:  env.Settings.DeliveryTimeout.D(),
	}, true
}
