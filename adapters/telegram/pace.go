package telegram

import (
	"context"
	"strconv"
	"time"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/internal/budget"
)

// Pacing keeps a chat under Telegram's flood limits, so a burst of
// messages is ordered and slowed here rather than refused with 429. Its
// zero value paces nothing (429s are still honoured).
type Pacing struct {
	// PerChat is the least time between two messages in one chat on
	// average (Telegram: about one a second); a chat may send two at
	// once, one of which a preview never takes.
	PerChat time.Duration
	// GroupPerMinute caps messages per minute in a group (Telegram: 20),
	// in any minute: two at once, then evenly spread.
	GroupPerMinute int
	// BotPerSecond caps the bot's calls a second over all chats
	// (Telegram: 30 messages).
	BotPerSecond int
}

// DefaultPacing follows Telegram's published limits.
var DefaultPacing = Pacing{PerChat: time.Second, GroupPerMinute: 20, BotPerSecond: 30}

// What Telegram counts: a message sent or edited costs a token of its
// chat, its group and the bot; a reaction or a chat action only the
// bot's (and both honour the chat's retry-after and wait behind its
// finals).
const (
	costMessage = 1
	costOther   = 0
)

// pacer is the client's delivery budget (adapters/internal/budget) with
// Telegram's buckets: "c<chat>", "g<chat>" for a group, "bot".
type pacer struct {
	cfg    Pacing
	budget *budget.Budget
}

func newPacer(cfg Pacing) *pacer {
	return &pacer{cfg: cfg, budget: budget.New(budget.DefaultMaxWait, budget.DefaultMaxBuckets)}
}

func chatKey(chat int64) string { return "c" + strconv.FormatInt(chat, 10) }

// draws are the buckets a call to chat costs: cost (costMessage or
// costOther) in the chat's and the group's, one in the bot's.
func (p *pacer) draws(chat int64, cost int) []budget.Draw {
	d := []budget.Draw{{Key: chatKey(chat), Rule: budget.Rule{Every: p.cfg.PerChat, Burst: 2, Reserve: 1}, Cost: cost}}
	if n := p.cfg.GroupPerMinute; chat < 0 && n > 0 {
		// Two at once and the rest spread so that no minute holds more
		// than n: a window-counted limit is never passed.
		burst := min(2, n)
		d = append(d, budget.Draw{Key: "g" + strconv.FormatInt(chat, 10),
			Rule: budget.Rule{Every: time.Minute / time.Duration(max(n-burst, 1)), Burst: burst, Reserve: 1}, Cost: cost})
	}
	if n := p.cfg.BotPerSecond; n > 0 {
		// Previews leave a sixth of the bot's second for replies; two
		// thirds of it at once.
		d = append(d, budget.Draw{Key: "bot", Rule: budget.Rule{Every: time.Second / time.Duration(n), Burst: max(2*n/3, 1), Reserve: n / 6}, Cost: 1})
	}
	return d
}

// wait takes what a call of priority pr costs in chat (groups have
// negative IDs); see budget.Budget.Take.
func (p *pacer) wait(ctx context.Context, pr adapters.Priority, op string, chat int64, cost int) error {
	return p.budget.Take(ctx, pr, op, p.draws(chat, cost)...)
}

// cool holds every call to chat for d, after Telegram answered 429.
func (p *pacer) cool(chat int64, d time.Duration) { p.budget.Cool(chatKey(chat), d) }

// coolingDown returns how long chat is still in a 429 cooldown.
func (p *pacer) coolingDown(chat int64) time.Duration { return p.budget.CoolingDown(chatKey(chat)) }
