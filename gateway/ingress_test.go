package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/replyflow/replyflow/pipeline"
)

func TestPerSenderScopeGivesEachGroupSenderASession(t *testing.T) {
	scope := func(channel string) pipeline.SessionScope {
		if channel == "telegram" {
			return pipeline.SessionScopePerSender
		}
		return pipeline.SessionScopeShared
	}
	i := &Ingress{Scope: scope}
	group := pipeline.Inbound{Channel: "telegram", Account: "bot", ChatID: "-100", ChatType: pipeline.ChatGroup, SenderID: "42"}
	assert.Equal(t, "session:telegram:bot:-100:~42", i.SessionOf(group).WorkflowID())
	direct := group
	direct.ChatType, direct.ChatID = pipeline.ChatDirect, "42"
	assert.Equal(t, "session:telegram:bot:42", i.SessionOf(direct).WorkflowID(), "a direct chat is one session either way")
	other := group
	other.Channel = "slack"
	assert.Equal(t, "session:slack:bot:-100", i.SessionOf(other).WorkflowID(), "the scope is per channel")
	assert.Equal(t, "session:telegram:bot:-100", (&Ingress{}).SessionOf(group).WorkflowID(), "no scope: shared")
}
