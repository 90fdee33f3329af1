package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestProposalButtonsNameTheirSession(t *testing.T) {
	long := strings.Repeat("s", MaxActionBytes)
	tests := []struct {
		name, sender string
		approve      string // the Approve button's action; Reject's is alike
		named        string // the session sender the press names
	}{
		{name: "a chat's session", approve: "approve:p12"},
		{name: "a Telegram user", sender: "4242", approve: "approve:p12@4242", named: "4242"},
		{name: "the longest Telegram ID", sender: "-9223372036854775808", approve: "approve:p12@-9223372036854775808", named: "-9223372036854775808"},
		{name: "a Discord snowflake", sender: "18446744073709551615", approve: "approve:p12@18446744073709551615", named: "18446744073709551615"},
		{name: "a Slack user", sender: "W0123456789ABCDEFGH", approve: "approve:p12@W0123456789ABCDEFGH", named: "W0123456789ABCDEFGH"},
		{name: "a web chat sender with @", sender: "alice@example.org", approve: "approve:p12@alice@example.org", named: "alice@example.org"},
		{name: "a sender that just fits", sender: long[:MaxActionBytes-len("approve:p12@")], approve: "approve:p12@" + long[:MaxActionBytes-len("approve:p12@")], named: long[:MaxActionBytes-len("approve:p12@")]},
		{name: "a sender one byte too long is left out", sender: long[:MaxActionBytes-len("approve:p12@")+1], approve: "approve:p12"},
		{name: "a web chat sender of MaxIDBytes is left out", sender: strings.Repeat("w", MaxIDBytes), approve: "approve:p12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := ProposalView{ID: "p12", Tool: "pay", Requester: "webchat:alice", SessionSender: tt.sender}
			text, buttons := RenderProposal(view)
			require.Len(t, buttons, 2)
			assert.Equal(t, tt.approve, buttons[0].Action)
			ref := strings.TrimPrefix(tt.approve, "approve:")
			assert.Contains(t, text, "Reply /approve "+ref+" or /reject "+ref+" [reason].", "a typed decision names what the buttons name")
			assert.Equal(t, tt.named, DecisionSession("/approve "+ref), "and reaches the same session")
			assert.Equal(t, "reject"+strings.TrimPrefix(tt.approve, "approve"), buttons[1].Action, "both buttons name the same session")
			for i, want := range []string{DecisionApprove, DecisionReject} {
				assert.LessOrEqual(t, len(buttons[i].Action), MaxActionBytes, "fits Telegram's callback_data")
				decision, id, sender, ok := ParseProposalAction(buttons[i].Action)
				require.True(t, ok, buttons[i].Action)
				assert.Equal(t, [3]string{want, "p12", tt.named}, [3]string{decision, id, sender}, "the round trip")
			}
		})
	}
}

func TestParseProposalAction(t *testing.T) {
	tests := []struct {
		action               string
		decision, id, sender string
		ok                   bool
	}{
		{action: "approve:p1", decision: "approve", id: "p1", ok: true},
		{action: "reject:p1-1", decision: "reject", id: "p1-1", ok: true},
		{action: "approve:p1@U1", decision: "approve", id: "p1", sender: "U1", ok: true},
		{action: "reject:p3@bob@example.org", decision: "reject", id: "p3", sender: "bob@example.org", ok: true},
		{action: "approve:p1@"},
		{action: "approve:@U1"},
		{action: "approve:p1@a:b"},
		{action: "approve:p1@a~b"},
		{action: "approve:p1@.."},
		{action: "approve:p1@" + strings.Repeat("a", MaxIDBytes+1)},
		{action: "delete:p1@U1"},
		{action: "approve"},
		{action: ""},
	}
	for _, tt := range tests {
		decision, id, sender, ok := ParseProposalAction(tt.action)
		assert.Equal(t, tt.ok, ok, tt.action)
		assert.Equal(t, [3]string{tt.decision, tt.id, tt.sender}, [3]string{decision, id, sender}, tt.action)
	}
	decision, id, ok := ParseAction("approve:p1@U1")
	assert.True(t, ok)
	assert.Equal(t, [2]string{"approve", "p1@U1"}, [2]string{decision, id}, "ParseAction reads the action whole")
}
