package pipeline

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Decisions on a proposal.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// Decision is a person's (or an operator's) answer to a proposal. It is the
// payload of the workflow's "proposal" signal and "decide" update.
type Decision struct {
	ID       string `json:"id"`
	Decision string `json:"decision"` // approve or reject
	By       string `json:"by"`       // "provider:id", or "operator:name"
	Reason   string `json:"reason,omitempty"`
}

// Validate checks the shape of a decision.
func (d Decision) Validate() error {
	if d.ID == "" {
		return fmt.Errorf("the decision names no proposal")
	}
	if d.Decision != DecisionApprove && d.Decision != DecisionReject {
		return fmt.Errorf("decision must be %q or %q, got %q", DecisionApprove, DecisionReject, d.Decision)
	}
	if d.By == "" {
		return fmt.Errorf("the decision does not say who decided")
	}
	return nil
}

// ParseAction reads a button's action, "approve:<id>" or "reject:<id>",
// whole: an action that names a session sender keeps it in id. The
// session reads its buttons with ParseProposalAction, which splits it.
func ParseAction(action string) (decision, id string, ok bool) {
	decision, id, ok = strings.Cut(action, ":")
	if !ok || id == "" || (decision != DecisionApprove && decision != DecisionReject) {
		return "", "", false
	}
	return decision, id, true
}

// MaxActionBytes bounds a proposal button's action: 64 bytes is the
// least that any platform's button carries back (the others carry 100
// characters and more), well under an Inbound's MaxIDBytes.
const MaxActionBytes = 64

// ProposalAction is a proposal button's action: "approve:<id>" or
// "reject:<id>", and "approve:<id>@<sender>" for a proposal of a
// per-sender session (ProposalView.SessionSender), whose press goes to
// that session whoever presses it. A sender too long for MaxActionBytes
// is left out: the press then goes to the presser's session.
func ProposalAction(decision, id, sessionSender string) string {
	action := decision + ":" + id
	if sessionSender == "" {
		return action
	}
	// Measured on the longer of the two decisions, so that both buttons
	// of a proposal name its session or neither does.
	if max(len(DecisionApprove), len(DecisionReject))+len(":"+id+"@"+sessionSender) > MaxActionBytes {
		return action
	}
	return action + "@" + sessionSender
}

// ParseProposalAction reads a proposal button's action (ProposalAction):
// its decision, its proposal's ID, and the sender whose session the
// proposal is in ("" when the action names none: a chat's session, or a
// button posted before actions named one). A proposal ID holds no "@",
// so the sender is what follows the first; it must be a valid ID
// (ValidateID), since the gateway makes a workflow ID of it.
func ParseProposalAction(action string) (decision, id, sessionSender string, ok bool) {
	decision, rest, ok := ParseAction(action)
	if !ok {
		return "", "", "", false
	}
	id, sessionSender, ok = ParseProposalRef(rest)
	if !ok {
		return "", "", "", false
	}
	return decision, id, sessionSender, true
}

// ProposalRef is how a person names a proposal in /approve and /reject:
// its ID, with its session's sender where its buttons name one
// ("p1@ana"), so that a typed decision reaches the same session as a
// press.
func ProposalRef(id, sessionSender string) string {
	return strings.TrimPrefix(ProposalAction(DecisionApprove, id, sessionSender), DecisionApprove+":")
}

// ParseProposalRef reads a ProposalRef: the proposal's ID and the sender
// whose session it is in ("" when it names none). A proposal ID holds no
// "@", so the sender is what follows the first; it must be a valid ID
// (ValidateID), since the gateway makes a workflow ID of it.
func ParseProposalRef(ref string) (id, sessionSender string, ok bool) {
	id, sessionSender, named := strings.Cut(ref, "@")
	if id == "" || (named && ValidateID("sender", sessionSender) != nil) {
		return "", "", false
	}
	return id, sessionSender, true
}

// DecisionSession is the sender whose session a typed /approve or
// /reject names (ProposalRef), "" for any other text.
func DecisionSession(text string) string {
	if !strings.HasPrefix(text, "/"+DecisionApprove+" ") && !strings.HasPrefix(text, "/"+DecisionReject+" ") {
		return ""
	}
	p := ParseMessage(text, ParseOptions{})
	if p.Command != CommandDecide || p.Decision == nil {
		return ""
	}
	_, sender, ok := ParseProposalRef(p.Decision.ID)
	if !ok {
		return ""
	}
	return sender
}

// argsSummaryMaxRunes bounds a proposal's argument summary, so that a
// model that sends a huge argument object cannot make the proposal
// message too long for the platform.
const argsSummaryMaxRunes = 400

// SummarizeArgs renders a tool call's JSON arguments for a person:
// "amount=100, to=bob", keys sorted, long values cut, on one line.
func SummarizeArgs(arguments string) string {
	var args map[string]any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return SummaryLine("", arguments)
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, _ := json.Marshal(args[k])
		parts[i] = oneLine(k) + "=" + cutRunes(strings.Trim(string(v), `"`), 60)
	}
	return cutRunes(strings.Join(parts, ", "), argsSummaryMaxRunes)
}

// ProposalView is what a proposal message shows.
type ProposalView struct {
	ID, Tool, Summary, Requester string
	ExpiresAt                    time.Time
	// Outcome is empty while pending, else approved, rejected or expired.
	Outcome, DecidedBy, Reason string
	// SessionSender is the sender whose session the proposal is in
	// (SessionKey.Sender), "" for a chat's session. Its buttons name it,
	// so that an owner's press reaches this session and not the
	// owner's own.
	SessionSender string
}

// RenderProposal is the proposal message: pending with its buttons, or
// decided without.
func RenderProposal(p ProposalView) (string, []Button) {
	call := p.Tool
	if p.Summary != "" {
		call += " (" + p.Summary + ")"
	}
	switch p.Outcome {
	case "":
		ref := ProposalRef(p.ID, p.SessionSender)
		text := fmt.Sprintf("🔐 Approval needed [%s]: %s\nRequested by %s. Expires %s.\nReply /approve %s or /reject %s [reason].",
			p.ID, call, p.Requester, p.ExpiresAt.UTC().Format("2006-01-02 15:04 MST"), ref, ref)
		return text, []Button{
			{Text: "Approve", Action: ProposalAction(DecisionApprove, p.ID, p.SessionSender)},
			{Text: "Reject", Action: ProposalAction(DecisionReject, p.ID, p.SessionSender)},
		}
	case "approved":
		return fmt.Sprintf("✅ Approved by %s [%s]: %s", p.DecidedBy, p.ID, call), nil
	case "expired":
		return fmt.Sprintf("⌛ Expired without a decision [%s]: %s", p.ID, call), nil
	}
	text := fmt.Sprintf("🚫 Rejected by %s [%s]: %s", p.DecidedBy, p.ID, call)
	if p.Reason != "" {
		text += "\nReason: " + p.Reason
	}
	return text, nil
}
