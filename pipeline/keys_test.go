package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPerSenderSessionKeepsTheChat(t *testing.T) {
	group := Inbound{Channel: "telegram", Account: "mybot", ChatID: "-100123", ChatType: ChatGroup, SenderID: "4242"}
	shared := SessionKey{Channel: "telegram", Account: "mybot", Chat: "-100123"}

	assert.Equal(t, shared, group.SessionIn(SessionScopeShared))
	assert.Equal(t, group.Session(), group.SessionIn(SessionScopeShared), "the default scope is today's key")
	own := group.SessionIn(SessionScopePerSender)
	assert.Equal(t, SessionKey{Channel: "telegram", Account: "mybot", Chat: "-100123", Sender: "4242"}, own)
	assert.Equal(t, "session:telegram:mybot:-100123:~4242", own.WorkflowID())
	assert.Equal(t, "-100123", own.Chat, "replies go to the chat, and ReplyflowChat stays the chat")
	assert.Equal(t, shared.WorkflowID()+senderMark, own.WorkflowID()[:len(shared.WorkflowID())+len(senderMark)],
		"a chat's per-sender sessions are found by its own ID and the mark")

	other := group
	other.SenderID = "7"
	assert.NotEqual(t, own.WorkflowID(), other.SessionIn(SessionScopePerSender).WorkflowID())

	dm := group
	dm.ChatType = ChatDirect
	assert.Equal(t, dm.Session(), dm.SessionIn(SessionScopePerSender), "a direct chat keeps its session")
	web := Inbound{Channel: "webchat", ChatID: "demo", ChatType: ChatGroup, SenderID: "alice@example.org"}
	assert.Equal(t, "session:webchat:demo:~alice@example.org", web.SessionIn(SessionScopePerSender).WorkflowID())
}

func TestAPressGoesToTheSessionItsProposalIsIn(t *testing.T) {
	press := Inbound{Channel: "telegram", Account: "mybot", ChatID: "-100123", ChatType: ChatGroup, SenderID: "1", Action: "approve:p1@4242", ReplyTo: "77"}
	chat := SessionKey{Channel: "telegram", Account: "mybot", Chat: "-100123"}
	withSender := func(k SessionKey, sender string) SessionKey { k.Sender = sender; return k }
	tests := []struct {
		name   string
		change func(*Inbound)
		scope  SessionScope
		want   SessionKey
	}{
		{name: "an owner's press on another sender's proposal", scope: SessionScopePerSender, want: withSender(chat, "4242")},
		{name: "a press naming the presser's own session", change: func(in *Inbound) { in.SenderID = "4242" }, scope: SessionScopePerSender, want: withSender(chat, "4242")},
		{name: "a web chat press, which says direct", change: func(in *Inbound) { in.ChatType = ChatDirect }, scope: SessionScopePerSender, want: withSender(chat, "4242")},
		{name: "a button posted before actions named a session", change: func(in *Inbound) { in.Action = "approve:p1" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "an action that is no proposal's", change: func(in *Inbound) { in.Action = "approve:p1@a:b" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "an unknown action", change: func(in *Inbound) { in.Action = "launch:x@4242" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "a message naming a sender in its text only", change: func(in *Inbound) { in.Action, in.Text = "", "approve:p1@4242" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "a typed /approve of another sender's proposal", change: func(in *Inbound) { in.Action, in.Text = "", "/approve p1@4242" }, scope: SessionScopePerSender, want: withSender(chat, "4242")},
		{name: "a typed /reject with a reason", change: func(in *Inbound) { in.Action, in.Text = "", "/reject p1@4242 not now" }, scope: SessionScopePerSender, want: withSender(chat, "4242")},
		{name: "a typed /approve naming no session", change: func(in *Inbound) { in.Action, in.Text = "", "/approve p1" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "a typed /approve naming no valid sender", change: func(in *Inbound) { in.Action, in.Text = "", "/approve p1@a:b" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "a typed /approve naming a sender in a direct chat", change: func(in *Inbound) { in.Action, in.Text, in.ChatType = "", "/approve p1@4242", ChatDirect }, scope: SessionScopePerSender, want: chat},
		{name: "a reference inside other text", change: func(in *Inbound) { in.Action, in.Text = "", "please /approve p1@4242" }, scope: SessionScopePerSender, want: withSender(chat, "1")},
		{name: "the shared scope keeps every press in the chat's session", scope: SessionScopeShared, want: chat},
		{name: "and every typed decision", change: func(in *Inbound) { in.Action, in.Text = "", "/approve p1@4242" }, scope: SessionScopeShared, want: chat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := press
			if tt.change != nil {
				tt.change(&in)
			}
			assert.Equal(t, tt.want, in.SessionIn(tt.scope))
		})
	}
}

func TestSessionKeyJSONIsUnchangedWithoutASender(t *testing.T) {
	b, err := json.Marshal(SessionKey{Channel: "telegram", Account: "mybot", Chat: "-100123"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"channel":"telegram","account":"mybot","chat":"-100123"}`, string(b), "recorded histories hold keys without a sender")
}

func TestParseWorkflowID(t *testing.T) {
	for _, key := range []SessionKey{
		{Channel: "discord", Account: "900000000000000001", Chat: "100000000000000200"},
		{Channel: "webchat", Chat: "demo"},
		{Channel: "webchat", Chat: "demo", Sender: "alice@example.org"},
		{Channel: "telegram", Account: "mybot", Chat: "-100123", Sender: "4242"},
	} {
		got, ok := ParseWorkflowID(key.WorkflowID())
		assert.True(t, ok, key.WorkflowID())
		assert.Equal(t, key, got)
	}
	for _, id := range []string{"discord:1:2", "session:", "session:discord", "session:discord:a:b:c", "session:Discord:1:2",
		"session:discord:1:", "session:webchat:demo:~", "session:webchat:demo:~a:~b", "session:webchat:demo:~a~b", "session:webchat:~a",
		"session:telegram:bot:chat:~a:b", "session:telegram::chat"} {
		_, ok := ParseWorkflowID(id)
		assert.False(t, ok, id)
	}
	assert.EqualError(t, SessionKey{Channel: "webchat", Chat: "demo", Sender: "a:b"}.Validate(), `sender contains ':'; allowed are letters, digits and - _ . @ +`)
}

func FuzzParseWorkflowID(f *testing.F) {
	for _, s := range []string{"session:webchat:demo", "session:telegram:b:-1:~42", "session:a:b:c:~d", "session:a:~b", "session::~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		key, ok := ParseWorkflowID(id)
		if !ok {
			return
		}
		require.NoError(t, key.Validate())
		require.Equal(t, id, key.WorkflowID(), "one ID, one key")
	})
}

func TestParseSessionScope(t *testing.T) {
	for in, want := range map[string]SessionScope{"": SessionScopeShared, "shared": SessionScopeShared, " Per-Sender ": SessionScopePerSender} {
		got, err := ParseSessionScope(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseSessionScope("per-thread")
	assert.EqualError(t, err, `unknown session scope "per-thread"; use shared or per-sender`)
}
