package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
)

// Telegram keeps what the bot has not confirmed, for 24 hours, in both
// modes: a gateway that comes back gets what was sent while it was down.
// These tests stop the gateway (not a retry inside it) while messages are
// sent, with the last update before the outage handed to Temporal but not
// confirmed to Telegram, so that it reaches the new gateway again too.

// catchupChat is a group of its own for each run, as the Temporal server
// outlives a test (-count): two senders in a group, since one sender's
// messages in a row would be one debounced turn, and each message here
// must be answered on its own.
func catchupChat() telegramtest.Chat { return telegramtest.Group(-uniqueTelegramID()) }

// catchupMessage is a group message addressed to the bot.
func (s *telegramStack) catchupMessage(chat telegramtest.Chat, from telegramtest.User, text string) int {
	return s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: from, Text: "@replyflow_test_bot " + text})
}

// assertCaughtUp checks that each message was answered once, in the order
// sent, and that the one the old gateway handed over was dropped as a
// duplicate, not answered again.
func (s *telegramStack) assertCaughtUp(chat telegramtest.Chat, asked []int) {
	t := s.t
	var repliesTo []int
	for _, m := range s.fake.Sent(chat.ID) {
		repliesTo = append(repliesTo, m.ReplyTo)
	}
	assert.Equal(t, asked, repliesTo, "each message answered once, in the order sent: %q", sentTexts(s.fake, chat))
	assert.Zero(t, s.fake.Pending(), "Telegram holds nothing more")
	snap := s.stateOf(tgKey(chat))
	assert.Equal(t, len(asked), snap.TurnSeq)
	assert.Equal(t, len(asked), snap.Counters.Inbound)
	assert.Equal(t, 1, snap.Counters.Duplicates, "the update sent again after the restart")
}

func (s *telegramStack) waitCleared(chat telegramtest.Chat, asked ...int) {
	s.t.Helper()
	for _, id := range asked {
		waitFor(s.t, s.fake, "the reaction on "+strconv.Itoa(id)+" cleared", cleared(s.fake, chat, id))
	}
}

func TestTelegramPollingMessagesSentWhileTheGatewayWasDownAreAnsweredOnceInOrder(t *testing.T) {
	s := startTelegramStack(t, testConfig(t))
	s.startWorker(&testModel{})
	chat := catchupChat()
	before := s.catchupMessage(chat, tgAlice, "before the outage")
	s.waitCleared(chat, before)

	// The gateway hands the next update to Temporal, and its getUpdates
	// that would confirm it fails until the gateway is stopped: Telegram
	// still holds the update when the gateway is gone.
	polling := s.fake.Calls("getUpdates")
	waiting, err := strconv.ParseInt(polling[len(polling)-1].Params["offset"], 10, 64)
	require.NoError(t, err)
	const unconfirmed = 3
	s.fake.FailNext("getUpdates", unconfirmed, telegramtest.Fault{
		Status: http.StatusBadGateway, Description: "Bad Gateway",
		When: func(p map[string]string) bool {
			offset, _ := strconv.ParseInt(p["offset"], 10, 64)
			return offset > waiting
		},
	})
	handed := s.catchupMessage(chat, tgBob, "handed over, not confirmed")
	waitFor(t, s.fake, "the confirmation failing", func() bool {
		failed := 0
		for _, c := range s.fake.Calls("getUpdates") {
			if c.Status == http.StatusBadGateway {
				failed++
			}
		}
		return failed == unconfirmed
	})
	s.stopGateway()

	first := s.catchupMessage(chat, tgAlice, "while you were away")
	second := s.catchupMessage(chat, tgBob, "and me too")
	require.Equal(t, 3, s.fake.Pending(), "Telegram keeps them for the next getUpdates")

	s.restartGateway()
	s.waitTelegramUp()
	s.waitCleared(chat, handed, first, second)
	s.assertCaughtUp(chat, []int{before, handed, first, second})
}

// losingProxy stands between Telegram and the gateway's webhook, as the
// network does: it answers 502 while the gateway is down. Armed, it loses
// the gateway's answer to one delivery and from then on reaches no
// gateway until told it is back, as when the gateway dies after the
// signal and before its 200 reaches Telegram.
type losingProxy struct {
	*httptest.Server
	armed, down atomic.Bool
	lost        atomic.Int32
}

func newLosingProxy(t *testing.T, gateway string) *losingProxy {
	target, err := url.Parse(gateway)
	require.NoError(t, err)
	p := &losingProxy{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusOK && p.armed.CompareAndSwap(true, false) {
			p.down.Store(true)
			p.lost.Add(1)
			return errors.New("the gateway's answer is lost")
		}
		return nil
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func TestTelegramWebhookMessagesSentWhileTheGatewayWasDownAreAnsweredOnceInOrder(t *testing.T) {
	cfg, fake := withTelegram(t, testConfig(t))
	tg := telegramOf(cfg)
	tg.Mode, tg.WebhookSecret = "webhook", "s3cret-token"
	cfg.WebhookAddr = freeAddr(t)
	proxy := newLosingProxy(t, "http://"+cfg.WebhookAddr)
	tg.WebhookURL = proxy.URL + tg.WebhookPath
	s := &telegramStack{stack: startStack(t, cfg), fake: fake}
	s.waitTelegramUp()
	s.startWorker(&testModel{})
	chat := catchupChat()
	before := s.catchupMessage(chat, tgAlice, "before the outage")
	s.waitCleared(chat, before)

	proxy.armed.Store(true)
	handed := s.catchupMessage(chat, tgBob, "handed over, answer lost")
	waitFor(t, fake, "the delivery whose answer was lost", func() bool { return proxy.lost.Load() == 1 && fake.Pending() == 1 })
	s.stopGateway()

	first := s.catchupMessage(chat, tgAlice, "while you were away")
	second := s.catchupMessage(chat, tgBob, "and me too")
	// Telegram keeps delivering the oldest update again, later each time,
	// to a gateway that is not there.
	const whileDown = 3
	waitFor(t, fake, "deliveries failing while the gateway is down", func() bool {
		failed := 0
		for _, a := range fake.WebhookAttempts() {
			if a.Status == http.StatusBadGateway {
				failed++
			}
		}
		return failed >= 1+whileDown
	})
	require.Equal(t, 3, fake.Pending(), "Telegram keeps them until a 2xx")

	s.restartGateway()
	proxy.down.Store(false)
	s.waitCleared(chat, handed, first, second)
	s.assertCaughtUp(chat, []int{before, handed, first, second})
	var gaps []int64
	for _, a := range fake.WebhookAttempts() {
		if a.Status == http.StatusBadGateway {
			gaps = append(gaps, a.At.UnixMilli())
		}
	}
	require.GreaterOrEqual(t, len(gaps), 1+whileDown)
	assert.Greater(t, gaps[3]-gaps[2], gaps[1]-gaps[0], "Telegram waits longer after each failed delivery")
}
