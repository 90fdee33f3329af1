package discord

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

func validPlatform() *Platform {
	return &Platform{Token: "MTIz.abc.def", APIURL: DefaultAPIURL, CatchupLimit: 100, CatchupMaxAge: 24 * time.Hour, CatchupConversations: 200}
}

func TestPlatformValidateNamesTheVariable(t *testing.T) {
	assert.Empty(t, (&Platform{}).Validate(), "off: nothing to check")
	assert.Empty(t, validPlatform().Validate())
	p := validPlatform()
	p.Token = "has a space"
	p.APIURL = "discord.com/api"
	p.ApplicationID = "app"
	p.CatchupLimit = 0
	p.CatchupMaxAge = 0
	p.CatchupConversations = 0
	p.Reactions = map[string]string{"done": "tada", "thinking": "🤔", "party": "🎉", "error": "boom:12"}
	var msgs []string
	for _, err := range p.Validate() {
		msgs = append(msgs, err.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, name := range []string{"REPLYFLOW_DISCORD_TOKEN", "REPLYFLOW_DISCORD_API_URL", "REPLYFLOW_DISCORD_APPLICATION_ID",
		"REPLYFLOW_DISCORD_CATCHUP_LIMIT", "REPLYFLOW_DISCORD_CATCHUP_MAX_AGE", "REPLYFLOW_DISCORD_CATCHUP_CONVERSATIONS",
		`REPLYFLOW_DISCORD_REACTIONS: done: "tada" is not an emoji`,
		`unknown reaction state "party"`} {
		assert.Contains(t, all, name)
	}
	assert.Len(t, msgs, 8, all)
}

func TestPlatformServesThroughItsAPIURL(t *testing.T) {
	fake := newFake(t, discordtest.Options{})
	k := newSink()
	h := &health{}
	p := &Platform{Token: fake.Token, APIURL: fake.APIURL(), CatchupLimit: 100, CatchupMaxAge: time.Hour, CatchupConversations: 200}
	require.Empty(t, p.Validate())
	assert.True(t, p.Enabled())
	ctx, cancel := context.WithCancel(context.Background())
	serving, err := p.Serve(ctx, adapters.GatewaySide{Mux: http.NewServeMux(), Sink: k, Feedback: k, Health: h, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() {
		cancel()
		serving.Close()
	})
	h.waitFor(t, "up", func(s adapters.Health) bool { return s.State == adapters.StateUp })
	posted := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "hello"})
	k.waitAccepted(t, posted.ID)
	assert.NotEmpty(t, fake.Calls(discordtest.RouteGateway), "GET /gateway went to the API URL")

	out, err := p.Outbound(adapters.WorkerSide{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	id, err := out.Send(ctx, pipeline.Delivery{Session: pipeline.SessionKey{Channel: Channel, Account: "bot", Chat: general},
		IdempotencyKey: "k1", ReplyTo: posted.ID, Text: "hi ada", Total: 1})
	require.NoError(t, err, "the worker side posts through the API URL too")
	m, ok := fake.Message(general, id)
	require.True(t, ok)
	assert.Equal(t, "hi ada", m.Content)
	assert.Equal(t, TypingInterval, p.TypingInterval())
}
