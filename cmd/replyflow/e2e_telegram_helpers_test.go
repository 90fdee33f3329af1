package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

const telegramTestToken = "1000:e2e-secret"

// People in the Telegram tests, as the fake Bot API knows them.
var (
	tgAlice = telegramtest.User{ID: 501, Username: "alice", FirstName: "Alice"}
	tgBob   = telegramtest.User{ID: 502, Username: "bob", FirstName: "Bob"}
	tgBoss  = telegramtest.User{ID: 503, Username: "boss", FirstName: "Boss"}
)

// telegramStack is a gateway polling the fake Bot API, whose worker
// delivers to it.
type telegramStack struct {
	*stack
	fake *telegramtest.Server
}

// withTelegram points cfg at a new fake Bot API, with pacing off so the
// tests do not wait out Telegram's limits.
func withTelegram(t *testing.T, cfg Config) (Config, *telegramtest.Server) {
	fake := telegramtest.New(telegramTestToken)
	t.Cleanup(fake.Close)
	registerSecret("telegram bot token", fake.Token)
	cfg = cfg.withOwnPlatforms()
	tg := telegramOf(cfg)
	tg.Token = fake.Token
	tg.APIURL = fake.URL()
	tg.Pace = 0
	tg.GroupPerMinute = 0
	require.NoError(t, cfg.validate())
	return cfg, fake
}

func startTelegramStack(t *testing.T, cfg Config) *telegramStack {
	cfg, fake := withTelegram(t, cfg)
	s := &telegramStack{stack: startStack(t, cfg), fake: fake}
	s.waitTelegramUp()
	return s
}

func tgKey(chat telegramtest.Chat) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: "telegram", Account: "1000", Chat: strconv.FormatInt(chat.ID, 10)}
}

// waitFor fails the test unless cond holds within a minute; cond is
// checked after every call the fake Bot API gets.
func waitFor(t *testing.T, fake *telegramtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, fake.WaitFor(ctx, cond), "waiting for %s", what)
}

// emojiOn is the bot's reaction history on one message: each change's
// emoji, "" for a clear.
func emojiOn(fake *telegramtest.Server, chat telegramtest.Chat, msg int) []string {
	var out []string
	for _, r := range fake.Reactions(chat.ID, msg) {
		e := ""
		if len(r.Emoji) > 0 {
			e = r.Emoji[0]
		}
		out = append(out, e)
	}
	return out
}

// cleared reports whether the last reaction change on msg was a clear.
func cleared(fake *telegramtest.Server, chat telegramtest.Chat, msg int) func() bool {
	return func() bool {
		history := emojiOn(fake, chat, msg)
		return len(history) > 1 && history[len(history)-1] == ""
	}
}

// sentTexts are the texts of the bot's messages in chat.
func sentTexts(fake *telegramtest.Server, chat telegramtest.Chat) []string {
	var out []string
	for _, m := range fake.Sent(chat.ID) {
		out = append(out, m.Text)
	}
	return out
}
