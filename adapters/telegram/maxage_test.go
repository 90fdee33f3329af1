package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// syncBuffer is a log destination the poller's goroutine writes to while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the log's JSON lines.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		out = append(out, rec)
	}
	return out
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A message that reaches the gateway more than
// REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE after it was sent (Telegram kept it
// while no gateway ran) is left out: confirmed to Telegram, so never
// delivered again, not handed to the sink, and logged as a warning that
// names its chat and message and the setting to raise, never its text.
// One sent just within the bound, a fresh one, an edit made now of the
// old message and a button pressed now on it are handed on, in polling
// and in webhook mode alike.
func TestAMessageOlderThanTheCatchupMaxAgeIsLeftOutInBothModes(t *testing.T) {
	const maxAge = time.Hour
	for _, mode := range []string{"polling", "webhook"} {
		t.Run(mode, func(t *testing.T) {
			fake := telegramtest.New(testToken)
			defer fake.Close()
			to := &sink{}
			logs := &syncBuffer{}
			r, err := NewReceiver(context.Background(), ReceiverConfig{
				Token: testToken, APIURL: fake.URL(), Sink: to, Feedback: to, MaxAge: maxAge,
				Logger: slog.New(slog.NewJSONHandler(logs, nil)),
			})
			require.NoError(t, err)
			chat := telegramtest.Private(user42.ID)
			say := func(text string) int {
				return fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: text})
			}

			// Telegram's clock is set back while they are sent, so they
			// are dated (and queued) that long before the gateway gets them.
			fake.Advance(-2 * maxAge)
			old := say("secret old words")
			fake.Advance(maxAge + time.Minute)
			within := say("within the bound")
			fake.Advance(maxAge - time.Minute)
			fresh := say("just now")
			fake.AddEdit(chat.ID, old, "secret old words, edited now")
			fake.AddCallbackQuery(user42, chat.ID, old, "approve:p1") // a press on an old message
			require.Equal(t, 5, fake.Pending())

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			switch mode {
			case "polling":
				done := make(chan error, 1)
				go func() { done <- r.Poll(ctx) }()
				require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Pending() == 0 }),
					"every update is confirmed, the one left out too: Telegram must not deliver it again")
				require.Eventually(t, func() bool { return to.count() == 4 }, 10*time.Second, 10*time.Millisecond)
				cancel()
				require.NoError(t, <-done)
			case "webhook":
				hook := httptest.NewServer(r.WebhookHandler("s3cret"))
				defer hook.Close()
				for _, update := range fake.Updates() {
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(update))
					require.NoError(t, err)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
					resp, err := http.DefaultClient.Do(req)
					require.NoError(t, err)
					resp.Body.Close()
					assert.Equal(t, http.StatusOK, resp.StatusCode, "the one left out too: Telegram must not deliver it again")
				}
			}

			to.mu.Lock()
			var got []string
			for _, in := range to.accepted {
				if in.Action != "" {
					got = append(got, "press "+in.Action+" on "+in.ReplyTo)
					continue
				}
				got = append(got, in.MessageID+" "+in.Text)
			}
			to.mu.Unlock()
			id := strconv.Itoa
			assert.Equal(t, []string{
				id(within) + " within the bound",
				id(fresh) + " just now",
				id(old) + " secret old words, edited now",
				"press approve:p1 on " + id(old),
			}, got, "all but the old message are handed on, in order")

			var left []map[string]any
			for _, rec := range logs.records(t) {
				if rec["level"] == "WARN" {
					left = append(left, rec)
				}
			}
			require.Len(t, left, 1, "one warning, for the message left out: %s", logs)
			assert.Contains(t, left[0]["msg"], "left out")
			assert.Contains(t, left[0]["msg"], "raise REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE")
			assert.Equal(t, strconv.FormatInt(chat.ID, 10), left[0]["chat"])
			assert.Equal(t, id(old), left[0]["message_id"])
			assert.Equal(t, "1h0m0s", left[0]["max_age"])
			assert.NotContains(t, logs.String(), "secret old words", "the log never shows a message's text")
		})
	}
}

func TestTheCatchupMaxAgeIsCheckedAgainstWhatTelegramKeeps(t *testing.T) {
	valid := func() *Platform {
		return &Platform{Token: testToken, Mode: "polling", Pace: time.Second, CatchupMaxAge: 24 * time.Hour}
	}
	assert.Empty(t, valid().Validate(), "the default")
	for _, bad := range []time.Duration{0, -time.Hour, 30 * time.Second, 25 * time.Hour} {
		p := valid()
		p.CatchupMaxAge = bad
		errs := p.Validate()
		require.Len(t, errs, 1, "%s", bad)
		assert.Contains(t, errs[0].Error(), "REPLYFLOW_TELEGRAM_CATCHUP_MAX_AGE must be from 1m0s to 24h0m0s", "%s", bad)
	}
	p := valid()
	p.CatchupMaxAge = time.Minute
	assert.Empty(t, p.Validate(), "a minute, the least")
}
