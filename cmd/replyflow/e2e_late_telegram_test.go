package main

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lateNote is the first line of a reply to a message that waited past
// REPLYFLOW_STALE_AFTER (activities.StaleNote), and what follows it.
var lateNote = regexp.MustCompile(`^\(replying to .+ message from (?:[A-Z][a-z]{2} \d+, )?\d\d:\d\d, \d+ (?:min|h|days) ago\)\n`)

// telegramDownFor is how long, on the fake's clock, the gateway is away
// in TestTelegramGatewayDownForMinutesLosesNothingAndAnswersLate.
const telegramDownFor = 10 * time.Minute

// Telegram keeps what no gateway confirmed for 24 hours, in both modes.
// Here the gateway is away for minutes of Telegram's time: the fake's
// clock is set back while the messages are sent, so they are dated and
// queued that long before Telegram hands them over. Each is answered
// once, as a reply to it, starting with the late note; the message sent
// live before is answered without one.
func TestTelegramGatewayDownForMinutesLosesNothingAndAnswersLate(t *testing.T) {
	for _, mode := range []string{"polling", "webhook"} {
		t.Run(mode, func(t *testing.T) {
			cfg, fake := withTelegram(t, testConfig(t))
			cfg.StaleAfter = telegramDownFor / 2
			if mode == "webhook" {
				tg := telegramOf(cfg)
				tg.Mode, tg.WebhookSecret = "webhook", "s3cret-token"
				cfg.WebhookAddr = freeAddr(t)
				// Telegram pushes to the gateway's own address: while it
				// is down the pushes fail and are made again, later each
				// time, until one is answered 2xx.
				tg.WebhookURL = "http://" + cfg.WebhookAddr + tg.WebhookPath
			}
			s := &telegramStack{stack: startStack(t, cfg), fake: fake}
			s.waitTelegramUp()
			s.startWorker(&testModel{})
			chat := catchupChat()
			before := s.catchupMessage(chat, tgAlice, "before the outage")
			s.waitCleared(chat, before)

			s.stopGateway()
			fake.Advance(-telegramDownFor)
			first := s.catchupMessage(chat, tgAlice, "while you were away")
			second := s.catchupMessage(chat, tgBob, "and me too")
			fake.Advance(telegramDownFor)
			require.Equal(t, 2, fake.Pending(), "Telegram keeps them, queued minutes ago")
			if mode == "webhook" {
				waitFor(t, fake, "a push failing while the gateway is down", func() bool {
					for _, a := range fake.WebhookAttempts() {
						if a.Status != http.StatusOK {
							return true
						}
					}
					return false
				})
			}

			s.restartGateway()
			s.waitCleared(chat, first, second)
			sent := fake.Sent(chat.ID)
			require.Len(t, sent, 3, "each message answered once: %q", sentTexts(fake, chat))
			assert.Equal(t, []int{before, first, second}, []int{sent[0].ReplyTo, sent[1].ReplyTo, sent[2].ReplyTo},
				"each reply replies to its message, in the order sent")
			assert.Equal(t, "You said: @replyflow_test_bot before the outage", firstLine(sent[0].Text), "a live message's reply has no note")
			for i, said := range []string{"while you were away", "and me too"} {
				text := sent[i+1].Text
				require.Regexp(t, lateNote, text, "a reply to a message sent %s before says so", telegramDownFor)
				assert.Contains(t, firstLine(text), " 10 min ago)")
				assert.Equal(t, "You said: @replyflow_test_bot "+said, firstLine(lateNote.ReplaceAllString(text, "")))
			}
			assert.Zero(t, fake.Pending(), "Telegram holds nothing more")
			snap := s.stateOf(tgKey(chat))
			assert.Equal(t, 3, snap.TurnSeq)
			assert.Equal(t, 3, snap.Counters.Inbound)
		})
	}
}
