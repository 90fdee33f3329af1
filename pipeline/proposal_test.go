package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestProposalRendering(t *testing.T) {
	assert.Equal(t, "amount=100, note=for lunch, to=bob", SummarizeArgs(`{"to":"bob","amount":100,"note":"for lunch"}`))
	assert.Equal(t, "not json", SummarizeArgs("not json"))

	view := ProposalView{ID: "p1-1", Tool: "pay", Summary: "amount=100", Requester: "alice", ExpiresAt: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	text, buttons := RenderProposal(view)
	assert.Equal(t, "🔐 Approval needed [p1-1]: pay (amount=100)\nRequested by alice. Expires 2026-11-22 12:00 UTC.\nReply /approve p1-1 or /reject p1-1 [reason].", text)
	assert.Equal(t, []Button{{Text: "Approve", Action: "approve:p1-1"}, {Text: "Reject", Action: "reject:p1-1"}}, buttons)

	view.Outcome, view.DecidedBy, view.Reason = "rejected", "bob", "no"
	text, buttons = RenderProposal(view)
	assert.Equal(t, "🚫 Rejected by bob [p1-1]: pay (amount=100)\nReason: no", text)
	assert.Nil(t, buttons, "a decided proposal has no buttons")

	d, id, ok := ParseAction("reject:p1-1")
	assert.True(t, ok)
	assert.Equal(t, [2]string{"reject", "p1-1"}, [2]string{d, id})
	_, _, ok = ParseAction("delete:p1-1")
	assert.False(t, ok)
	assert.Error(t, Decision{ID: "p", Decision: "maybe", By: "x"}.Validate())
}
