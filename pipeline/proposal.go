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

// ParseAction reads a button's action, "approve:<id>" or "reject:<id>".
func ParseAction(action string) (decision, id string, ok bool) {
	decision, id, ok = strings.Cut(action, ":")
	if !ok || id == "" || (decision != DecisionApprove && decision != DecisionReject) {
		return "", "", false
	}
	return decision, id, true
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
		text := fmt.Sprintf("🔐 Approval needed [%s]: %s\nRequested by %s. Expires %s.\nReply /approve %s or /reject %s [reason].",
			p.ID, call, p.Requester, p.ExpiresAt.UTC().Format("2006-01-02 15:04 MST"), p.ID, p.ID)
		return text, []Button{{Text: "Approve", Action: DecisionApprove + ":" + p.ID}, {Text: "Reject", Action: DecisionReject + ":" + p.ID}}
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
