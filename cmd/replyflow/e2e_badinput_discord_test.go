package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord"
	"github.com/replyflow/replyflow/pipeline"
)

// Discord has no HTTP corpus: the gateway serves no Discord route (no
// interactions endpoint; button presses come over the gateway
// connection), it dials out to Discord's websocket, and Discord assigns
// every ID (snowflakes) and checks every sender. What a stranger controls
// is a message's content, so that is what this test sends, through the
// fake Discord's gateway: control characters, bytes that are no UTF-8
// and a text far over what a session takes. Each must reach its session
// as valid, bounded text, and the connection must stay as it was.
func TestBadInputDiscordHostileContentsReachTheSessionBounded(t *testing.T) {
	cfg := testConfig(t)
	cfg.LogLevel = "debug"
	s := startDiscordStack(t, cfg)
	model := &notingModel{texts: make(chan string, 10)}
	s.startWorker(model)
	identifies := len(s.fake.Identifies())

	for _, c := range []struct {
		name, content string
		check         func(t *testing.T, text string)
	}{
		{"control characters", "a\x00b \x1b[31mred\x1b[0m \x1b]0;owned\x07", func(t *testing.T, text string) {
			assert.Equal(t, "a\x00b \x1b[31mred\x1b[0m \x1b]0;owned\x07", text, "the user's text, as sent")
		}},
		{"no UTF-8", "bad \xff\xfe bytes", func(t *testing.T, text string) {
			assert.True(t, utf8.ValidString(text), "%q", text)
			assert.Contains(t, text, "bytes")
		}},
		{"100,000 bytes", strings.Repeat("a", 100_000), func(t *testing.T, text string) {
			assert.LessOrEqual(t, len(text), pipeline.MaxTextBytes)
			assert.True(t, strings.HasSuffix(text, strings.TrimSpace(pipeline.TruncatedMark)), "marked as cut: ...%q", text[max(0, len(text)-80):])
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			channel := s.newChannel()
			s.mention(channel, discordAlice, c.content)
			select {
			case text := <-model.texts:
				c.check(t, text)
			case <-time.After(time.Minute):
				t.Fatalf("the session of channel %s never asked the model", channel)
			}
			assert.Equal(t, 1, settledSeen(t, s.stack, s.key(channel)), "one message in the session")
		})
	}
	resp, err := http.Get(s.baseURL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, adapters.StateUp, s.health()[discord.Channel].State)
	assert.Equal(t, 1, s.fake.Connections())
	assert.Len(t, s.fake.Identifies(), identifies, "no content made the gateway connect again")
}

// notingModel hands the text of each turn's last user message (without
// the session's note to the model) to texts, and answers briefly.
type notingModel struct{ texts chan string }

func (*notingModel) Name() string { return "test/noting" }

func (m *notingModel) Complete(ctx context.Context, p models.Prompt) (models.Completion, error) {
	// A group chat's turn carries a note for the model after the text.
	text, _, _ := strings.Cut(lastUserText(p), "\n\n**[SYSTEM MESSAGE")
	select {
	case m.texts <- text:
	case <-ctx.Done():
		return models.Completion{}, ctx.Err()
	}
	return models.Completion{Text: "noted"}, nil
}
