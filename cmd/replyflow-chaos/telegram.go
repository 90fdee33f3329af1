package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// botAccount is the fake bot's ID, the account part of its sessions' keys.
const botAccount = "4242"

// telegramPlatform talks in private chats through the fake Bot API.
// Telegram has no idempotency key for sends, so a chunk the platform
// answered just before a worker or server kill is sent again by the
// retry; such duplicates are explained, one per kill and chat.
type telegramPlatform struct {
	fake *telegramtest.Server
}

func newTelegram() *telegramPlatform {
	return &telegramPlatform{fake: telegramtest.New(botAccount + ":chaos")}
}

func (t *telegramPlatform) name() string           { return "telegram" }
func (t *telegramPlatform) env() map[string]string { return harness.TelegramVars(t.fake) }
func (t *telegramPlatform) close()                 { t.fake.Close() }

// webhookEnv turns the gateways to webhook mode, with Telegram (the fake)
// delivering to base, the balancer in front of them: each update goes to
// one gateway, and again until one accepted it.
func (t *telegramPlatform) webhookEnv(base string) map[string]string {
	return map[string]string{
		"TELEGRAM_MODE":           "webhook",
		"TELEGRAM_WEBHOOK_URL":    base + "/telegram/webhook",
		"TELEGRAM_WEBHOOK_SECRET": webhookSecret,
	}
}

func (t *telegramPlatform) say(conv, _ int, token string) sent {
	chat := telegramtest.Private(int64(7_000_000 + conv))
	user := telegramtest.User{ID: chat.ID, FirstName: "Chaos"}
	msg := t.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user, Text: "hello " + token})
	return sent{chat: strconv.FormatInt(chat.ID, 10), msg: strconv.Itoa(msg), token: token}
}

func ids(m sent) (int64, int) {
	chat, _ := strconv.ParseInt(m.chat, 10, 64)
	msg, _ := strconv.Atoi(m.msg)
	return chat, msg
}

func (t *telegramPlatform) answered(m sent) bool {
	chat, _ := ids(m)
	for _, b := range t.fake.Sent(chat) {
		if strings.Contains(b.Text, m.token) {
			return true
		}
	}
	return false
}

func (t *telegramPlatform) showing(m sent) string {
	if h := t.fake.Reactions(ids(m)); len(h) > 0 {
		return strings.Join(h[len(h)-1].Emoji, " ")
	}
	return ""
}

func (t *telegramPlatform) waitFor(ctx context.Context, cond func() bool) error {
	return t.fake.WaitFor(ctx, cond)
}

func (t *telegramPlatform) posted() int {
	n := 0
	for _, c := range t.fake.Calls("sendMessage") {
		if c.Status == 200 {
			n++
		}
	}
	return n
}

func (t *telegramPlatform) session(chat string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: telegram.Channel, Account: botAccount, Chat: chat}
}

// tally finds chunks sent twice to a chat and explains each by a worker
// or server kill that hit the first send in flight (see inFlightAt). A
// kill explains at most one duplicate per chat, the one chunk its
// delivery had in flight there.
func (t *telegramPlatform) tally(kills []kill, _ string, rep *platformReport) {
	if attempts := t.fake.WebhookAttempts(); len(attempts) > 0 {
		again := 0
		for _, a := range attempts {
			if a.Status/100 != 2 {
				again++
			}
		}
		rep.figures = append(rep.figures, fmt.Sprintf("webhook deliveries       %d, of them %d refused or cut off (a gateway down: Telegram delivers again)", len(attempts), again))
	}
	type chunk struct{ chat, text string }
	firstAt := map[chunk]time.Time{}
	used := map[[2]string]bool{} // kill index and chat
	for _, call := range t.fake.Calls("sendMessage") {
		if call.Status != 200 {
			continue
		}
		c := chunk{call.Params["chat_id"], call.Params["text"]}
		first, seen := firstAt[c]
		if !seen {
			firstAt[c] = call.At
			continue
		}
		rep.duplicates++
		explained := false
		for _, i := range inFlightAt(kills, first) {
			key := [2]string{strconv.Itoa(i), c.chat}
			if used[key] {
				continue
			}
			used[key], explained = true, true
			rep.explainedBy[kills[i].victim]++
			break
		}
		if explained {
			rep.explained++
		} else {
			rep.problems = append(rep.problems, fmt.Sprintf("chat %s got %q twice (first at %s) with no kill in flight",
				c.chat, firstLine(c.text), first.Format(timeFormat)))
		}
	}
}
