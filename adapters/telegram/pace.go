package telegram

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pacing keeps a chat under Telegram's flood limits, so a burst of chunks
// is slowed down here rather than refused with 429.
type Pacing struct {
	// PerChat is the least time between two messages in one chat
	// (Telegram: about one a second).
	PerChat time.Duration
	// GroupPerMinute caps messages per minute in a group (Telegram: 20).
	GroupPerMinute int
}

// DefaultPacing follows Telegram's published limits.
var DefaultPacing = Pacing{PerChat: time.Second, GroupPerMinute: 20}

// maxPacedChats bounds the pacer's memory; chats quiet for a minute are
// forgotten first.
const maxPacedChats = 10_000

type chatPace struct {
	chat, group *rate.Limiter
	// cooldown is when a 429's retry_after ends: until then nothing is
	// sent to the chat.
	cooldown time.Time
	lastUsed time.Time
}

type pacer struct {
	cfg   Pacing
	mu    sync.Mutex
	chats map[int64]*chatPace
}

func newPacer(cfg Pacing) *pacer { return &pacer{cfg: cfg, chats: map[int64]*chatPace{}} }

func (p *pacer) get(chat int64, now time.Time) *chatPace {
	c, ok := p.chats[chat]
	if !ok {
		if len(p.chats) >= maxPacedChats {
			for id, old := range p.chats {
				if now.Sub(old.lastUsed) > time.Minute {
					delete(p.chats, id)
				}
			}
		}
		c = &chatPace{chat: rate.NewLimiter(rate.Inf, 1), group: rate.NewLimiter(rate.Inf, 1)}
		if p.cfg.PerChat > 0 {
			c.chat = rate.NewLimiter(rate.Every(p.cfg.PerChat), 1)
		}
		if p.cfg.GroupPerMinute > 0 {
			c.group = rate.NewLimiter(rate.Every(time.Minute/time.Duration(p.cfg.GroupPerMinute)), p.cfg.GroupPerMinute)
		}
		p.chats[chat] = c
	}
	c.lastUsed = now
	return c
}

// wait blocks until a message may go to chat (groups have negative IDs).
func (p *pacer) wait(ctx context.Context, chat int64) error {
	p.mu.Lock()
	c := p.get(chat, time.Now())
	cooldown := time.Until(c.cooldown)
	p.mu.Unlock()
	if cooldown > 0 {
		t := time.NewTimer(cooldown)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	if chat < 0 {
		if err := c.group.Wait(ctx); err != nil {
			return err
		}
	}
	return c.chat.Wait(ctx)
}

// coolingDown returns how long chat is still in a 429 cooldown.
func (p *pacer) coolingDown(chat int64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.chats[chat]; ok {
		return max(0, time.Until(c.cooldown))
	}
	return 0
}

// cool holds every call to chat for d, after Telegram answered 429.
func (p *pacer) cool(chat int64, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.get(chat, time.Now())
	if until := time.Now().Add(d); until.After(c.cooldown) {
		c.cooldown = until
	}
}
